/** Resume's check of the root: a worktree whose directory vanished is re-added for its branch. */
import type { Database } from "bun:sqlite";
import { lstatSync } from "node:fs";
import { updateWorkspace, type WorkspaceRecord } from "../store/workspaces.ts";
import { captureConfinement, rootProblem, RootProblem } from "./confinement.ts";
import { childTracker, repoGuard, write } from "./lock.ts";
import { readdWorktree } from "./worktree.ts";

/**
 * Throws unless the root is still the workspace's own directory (confinement.ts). Only a
 * worktree whose directory vanished is brought back: re-added, then its new identity recorded.
 * A root replaced by anything (a symlink, another directory) is never "restored". A workspace
 * made before schema 2 gets its identity recorded here.
 */
export async function restoreRoot(db: Database, record: WorkspaceRecord): Promise<void> {
  const name = JSON.stringify(record.workspaceId);
  const problem = rootProblem(record);
  if (problem === null) {
    if (!record.confinement) write(db, () => void updateWorkspace(db, record.workspaceId, { confinement: captureConfinement(record) }));
    return;
  }
  const { checkout } = record.details;
  if (record.kind !== "worktree" || checkout === undefined || lstatSync(checkout, { throwIfNoEntry: false }) !== undefined) {
    throw new Error(`cannot resume workspace ${name}: ${problem}`);
  }
  try {
    await readdWorktree(record.details, childTracker(db, record.workspaceId), repoGuard(db));
  } catch (error) {
    throw new Error(`cannot resume workspace ${name}: its worktree ${checkout} vanished and could not be re-added: ${(error as Error).message}`);
  }
  let confinement;
  try {
    confinement = captureConfinement(record);
  } catch (error) {
    if (error instanceof RootProblem) throw new Error(`cannot resume workspace ${name}: ${error.message}`);
    throw error;
  }
  write(db, () => void updateWorkspace(db, record.workspaceId, { confinement }));
}
