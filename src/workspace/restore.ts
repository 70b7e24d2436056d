/** Resume's check of the root: a worktree whose directory vanished is re-added for its branch. */
import type { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import type { WorkspaceRecord } from "../store/workspaces.ts";
import { rootProblem } from "./access.ts";
import { childTracker, repoGuard } from "./lock.ts";
import { readdWorktree } from "./worktree.ts";

/** Throws unless the root is a directory again; only a vanished worktree can be brought back. */
export async function restoreRoot(db: Database, record: WorkspaceRecord): Promise<void> {
  if (rootProblem(record.root) === null) return;
  const name = JSON.stringify(record.workspaceId);
  const { checkout } = record.details;
  if (record.kind === "worktree" && checkout !== undefined && !existsSync(checkout)) {
    try {
      await readdWorktree(record.details, childTracker(db, record.workspaceId), repoGuard(db));
    } catch (error) {
      throw new Error(`cannot resume workspace ${name}: its worktree ${checkout} vanished and could not be re-added: ${(error as Error).message}`);
    }
  }
  const problem = rootProblem(record.root);
  if (problem) throw new Error(`cannot resume workspace ${name}: ${problem}`);
}
