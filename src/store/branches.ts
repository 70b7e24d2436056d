/**
 * The branches creates made in users' repositories, by workspace id, kept after the workspace
 * is gone: destroy keeps a branch (it holds the agent's commits), and this is what lets the same
 * workspace be created again on it (workspace/materialize.ts).
 */
import type { Database } from "bun:sqlite";
import { now } from "./db.ts";

/** A branch a finished create made. */
export interface MadeBranch {
  /** The repository's common git dir and the branch's short name. */
  commonDir: string;
  branch: string;
  workspaceId: string;
  owner: string;
  /**
   * The commit it is known at: where it was made, then its tip when its workspace was destroyed
   * (keptBranchAt). A branch of that name made anew by someone else (from an unrelated commit,
   * or from a main that moved on without the agent's commits) does not descend from it.
   */
  baseCommit: string;
}

/** Records (or replaces) who made a branch; called in the transaction that finishes the create. */
export function recordMadeBranch(db: Database, made: MadeBranch): void {
  db.query("INSERT OR REPLACE INTO made_branches (common_dir, branch, workspace_id, owner, base_commit, made_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)").run(
    made.commonDir,
    made.branch,
    made.workspaceId,
    made.owner,
    made.baseCommit,
    now(),
  );
}

/** Who made branch `branch` of the repository at `commonDir`, or null when no create of this home did. */
export function madeBranch(db: Database, commonDir: string, branch: string): MadeBranch | null {
  const row = db
    .query("SELECT common_dir AS commonDir, branch, workspace_id AS workspaceId, owner, base_commit AS baseCommit FROM made_branches WHERE common_dir = ?1 AND branch = ?2")
    .get(commonDir, branch);
  return row as MadeBranch | null;
}

/** Its workspace's destroy kept the branch at `commit`: what a later create's branch must descend from to be taken for ours. */
export function keptBranchAt(db: Database, made: Omit<MadeBranch, "owner" | "baseCommit">, commit: string): void {
  db.query("UPDATE made_branches SET base_commit = ?4 WHERE common_dir = ?1 AND branch = ?2 AND workspace_id = ?3").run(made.commonDir, made.branch, made.workspaceId, commit);
}
