/** Destroying a workspace: shared by `destroy` and `reconcile`. */
import type { Database } from "bun:sqlite";
import { removeWorkspaceCgroup } from "./containment.ts";
import { stopWorkspaceExecutions } from "./executions.ts";
import { deleteExecutions, deleteOrphanRecords } from "../store/executions.ts";
import { deleteWorkspace, updateWorkspace, type WorkspaceRecord } from "../store/workspaces.ts";
import { childTracker, repoGuard, liveHolder, reapOrphanChild, takeLock, untilFree } from "./lock.ts";
import { writeTransaction } from "../store/db.ts";
import { assertOwner, type Ownership } from "./owner.ts";
import { removeOwned } from "./remove.ts";
import { logLine } from "../log/runtime-log.ts";

/**
 * Destroys `workspaceId` if it exists (idempotent): waits for a live operation on it to end,
 * records the intent (`destroying`), SIGKILLs every live execution and waits until they are
 * gone, removes its cgroups and the owned storage (never an adopted directory), then forgets
 * the records.
 * A create that died midway is undone completely, including the branch it made.
 * Returns false when there was nothing to destroy.
 */
export async function destroyWorkspace(db: Database, home: string, workspaceId: string, owner: Ownership): Promise<boolean> {
  const previous = await untilFree<WorkspaceRecord | null>(db, workspaceId, (record) => {
    if (!record) return { done: null };
    assertOwner(record, owner);
    if (liveHolder(record)) return { wait: record };
    takeLock(db, workspaceId, "destroy");
    updateWorkspace(db, workspaceId, { status: "destroying" });
    return { done: record };
  });
  if (!previous) {
    // Nothing to destroy; exec ids refused while no such workspace existed are forgotten.
    writeTransaction(db, () => deleteOrphanRecords(db, workspaceId));
    return false;
  }
  await reapOrphanChild(db, previous);
  await stopWorkspaceExecutions(db, workspaceId, 0, previous.cgroup);
  if (previous.cgroup) removeWorkspaceCgroup(previous.cgroup);
  // A record still `creating` here belongs to a create that died (live ones are waited for).
  const abandonedCreate = previous.status === "creating";
  await removeOwned(home, previous, { undo: abandonedCreate, staleLocks: abandonedCreate, tracker: childTracker(db, workspaceId), guard: repoGuard(db) });
  writeTransaction(db, () => {
    deleteExecutions(db, workspaceId);
    deleteWorkspace(db, workspaceId);
  });
  // For reconcile above all: which workspaces it removed is what an operator asks afterwards.
  logLine("info", "removed", { workspaceId, status: previous.status, kind: previous.kind, root: previous.root });
  return true;
}
