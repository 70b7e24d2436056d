/** The gate in front of every exec: is this workspace usable right now, and is its root still its own? */
import type { Database } from "bun:sqlite";
import { closeDescriptor } from "../platform/directory.ts";
import { writeTransaction } from "../store/db.ts";
import { updateWorkspace, type WorkspaceRecord } from "../store/workspaces.ts";
import { openRoot, RootProblem, sameConfinement, type OpenRoot } from "./confinement.ts";
import type { Ownership } from "./owner.ts";
import { requireWorkspace } from "./refusals.ts";

/**
 * Opens the root of a ready workspace, proven to be its own (confinement.ts), or throws saying
 * why it is not usable. What was found is recorded when it differs from the record: a workspace
 * made before schema 2 (no identity yet), or one whose filesystem was renumbered. Call inside a
 * write transaction.
 */
function openUsableRoot(db: Database, record: WorkspaceRecord): OpenRoot {
  let root: OpenRoot;
  try {
    root = openRoot(record);
  } catch (error) {
    if (error instanceof RootProblem) throw new Error(`workspace ${JSON.stringify(record.workspaceId)} is not usable: ${error.message}`);
    throw error;
  }
  if (!sameConfinement(record.confinement, root.seen)) updateWorkspace(db, record.workspaceId, { confinement: root.seen });
  return root;
}

/**
 * Runs `fn` with the workspace's open root inside a write transaction (BEGIN IMMEDIATE) after
 * re-checking that the workspace is ready. Record an execution inside `fn`: pause flips the
 * status in its own immediate transaction before listing executions to stop, so a launch
 * either is seen and stopped by pause, or sees "paused" here and must not go on.
 * On success `fn` owns `root.fd` (it must close it); if `fn` throws, it is closed here.
 */
export function whileReady<T>(db: Database, workspaceId: string, owner: Ownership, fn: (root: OpenRoot, record: WorkspaceRecord) => T): T {
  return writeTransaction(db, () => {
    const record = requireWorkspace(db, workspaceId, owner, { ready: true });
    const root = openUsableRoot(db, record);
    try {
      return fn(root, record);
    } catch (error) {
      closeDescriptor(root.fd);
      throw error;
    }
  });
}
