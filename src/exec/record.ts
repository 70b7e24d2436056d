/**
 * How the wrapper ends its execution record. fd 4 is authoritative, the store is not: a store
 * that refuses a write (disk full, read-only) never keeps `eof` and `exit` from the daemon, nor
 * the wrapper from mirroring the real status. What could not be written is said in the runtime
 * log, and the record is finished later, from what the kernel says, by the next exec of the
 * workspace, `signal`, pause, destroy or reconcile (workspace/executions.ts settleEnded).
 */
import { writeTransaction, type Store } from "../store/db.ts";
import { markFinished, recordRefused, type Reservation } from "../store/executions.ts";
import { getWorkspace } from "../store/workspaces.ts";
import { diagnose } from "../output.ts";
import { ownershipProblem, type Ownership } from "../workspace/owner.ts";
import type { ExitStatus } from "../protocol/index.ts";

/** Where the record is: the plan's store and identity. */
export interface RecordOf {
  store: Store;
  workspaceId: string;
  execId: string;
}

/** Marks the execution finished (with its outcome when it ran); a store failure is reported, not thrown. */
export function finishRecord(plan: RecordOf, outcome?: ExitStatus): void {
  try {
    markFinished(plan.store.db, plan.workspaceId, plan.execId, outcome);
  } catch (error) {
    diagnose(`cannot record the end of execution ${JSON.stringify(plan.execId)} in the store (${(error as Error).message}); the next exec, signal, pause, destroy or reconcile of workspace ${JSON.stringify(plan.workspaceId)} finishes the record`);
  }
}

/**
 * An exec refused before anything launched: its identity is recorded as finished, so the
 * daemon's cleanup `signal` for it answers "already clean" instead of "not ready". Never in a
 * workspace of another owner (refusing it changes nothing of theirs), never over a record that
 * exists (a reused identity keeps its own). A workspace that does not exist (yet) gets the
 * record too: nothing can ever run under that identity, and destroy or reconcile drops it.
 */
export function recordRefusal(store: Store, reservation: Reservation, owner: Ownership): void {
  try {
    writeTransaction(store.db, () => {
      const workspace = getWorkspace(store.db, reservation.workspaceId);
      if (workspace && ownershipProblem(workspace, owner) !== null) return;
      recordRefused(store.db, reservation);
    });
  } catch (error) {
    diagnose(`cannot record the refused execution ${JSON.stringify(reservation.execId)} in the store (${(error as Error).message}); signal will call it not ready`);
  }
}
