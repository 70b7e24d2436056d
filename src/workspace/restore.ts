/** Resume's check of the root: a worktree whose directory vanished is re-added for its branch. */
import type { Database } from "bun:sqlite";
import { lstatSync } from "node:fs";
import { closeDescriptor } from "../platform/directory.ts";
import { updateWorkspace, type Confinement, type WorkspaceRecord } from "../store/workspaces.ts";
import { captureConfinement, openRoot, RootProblem, sameConfinement } from "./confinement.ts";
import { childTracker, repoGuard } from "./lock.ts";
import { writeTransaction } from "../store/db.ts";
import { readdWorktree } from "./worktree.ts";

/**
 * Throws unless the root is still the workspace's own directory (confinement.ts). Only a
 * worktree whose directory vanished is brought back: re-added, then its new identity recorded.
 * A root replaced by anything (a symlink, another directory) is never "restored". What was
 * found is recorded when the record lacks it (a workspace made before schema 2).
 */
export async function restoreRoot(db: Database, record: WorkspaceRecord): Promise<void> {
  const name = JSON.stringify(record.workspaceId);
  let seen: Confinement;
  try {
    const opened = openRoot(record);
    closeDescriptor(opened.fd);
    seen = opened.seen;
  } catch (error) {
    if (!(error instanceof RootProblem)) throw error;
    if (!vanishedWorktree(record)) throw new Error(`cannot resume workspace ${name}: ${error.message}`);
    seen = await readdVanished(db, record, name);
  }
  if (!sameConfinement(record.confinement, seen)) writeTransaction(db, () => void updateWorkspace(db, record.workspaceId, { confinement: seen }));
}

function vanishedWorktree(record: WorkspaceRecord): boolean {
  const { checkout } = record.details;
  return record.kind === "worktree" && checkout !== undefined && lstatSync(checkout, { throwIfNoEntry: false }) === undefined;
}

/** Re-adds the worktree and returns the identity of the new directory. */
async function readdVanished(db: Database, record: WorkspaceRecord, name: string): Promise<Confinement> {
  try {
    await readdWorktree(record.details, childTracker(db, record.workspaceId), repoGuard(db));
  } catch (error) {
    throw new Error(`cannot resume workspace ${name}: its worktree ${record.details.checkout} vanished and could not be re-added: ${(error as Error).message}`);
  }
  try {
    return captureConfinement(record);
  } catch (error) {
    if (error instanceof RootProblem) throw new Error(`cannot resume workspace ${name}: ${error.message}`);
    throw error;
  }
}
