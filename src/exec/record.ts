/**
 * The execution record's one gateway: every write the wrapper makes of it goes through here.
 * The reservation (made by prepare.ts inside the transaction that sees the workspace ready),
 * the launch that turns it into a running workload's identity (launch.ts, while the
 * reservation still stands), its end, and a refusal.
 *
 * The record's end: fd 4 is authoritative, the store is not. A store that refuses a write
 * (disk full, read-only) never keeps `eof` and `exit` from the daemon, nor the wrapper from
 * mirroring the real status. What could not be written is said on stderr, and the record is
 * finished later, from what the kernel says, by the next exec of the workspace, `signal`,
 * pause, destroy or reconcile (containment/executions.ts settleEnded).
 */
import type { Database } from "bun:sqlite";
import { diagnose } from "../output.ts";
import type { ExitStatus } from "../protocol/index.ts";
import { storeWriteProblem, writeTransaction, type Store } from "../store/db.ts";
import { markFinished, mayLaunch, recordLaunch, recordRefused, reserveExecution, type Reservation } from "../store/executions.ts";
import { getWorkspace } from "../store/workspaces.ts";
import { ownershipProblem, type Ownership } from "../workspace/owner.ts";

/** Where the record is: the plan's store and identity. */
interface RecordOf {
  store: Store;
  workspaceId: string;
  execId: string;
}

/**
 * Marks the execution finished (with its outcome when it ran); a store failure is reported, not
 * thrown. The store is looked at first (db.ts storeWriteProblem): written through this
 * process's old mappings, a store the kernel now refuses would kill the wrapper (SIGBUS) before
 * `exit` reached fd 4. A store that could not be written is marked `abandoned`: then it must
 * not be touched again, not even closed (closing checkpoints through the same mapping).
 */
export function finishRecord(plan: RecordOf, outcome?: ExitStatus): void {
  const unwritable = storeWriteProblem(plan.store.db.filename);
  try {
    if (unwritable !== null) throw new Error(unwritable);
    markFinished(plan.store.db, plan.workspaceId, plan.execId, outcome);
  } catch (error) {
    diagnose(`cannot record the end of execution ${JSON.stringify(plan.execId)} in the store (${(error as Error).message}); the next exec, signal, pause, destroy or reconcile of workspace ${JSON.stringify(plan.workspaceId)} finishes the record`);
  }
  if (unwritable !== null) plan.store.abandoned = true;
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

/**
 * Claims the execution identity (with the cgroup it will run in) in the caller's write
 * transaction, the one that saw the workspace ready. Throws when the identity was used before.
 */
export function reserveRecord(db: Database, reservation: Reservation & { cgroup: string | null }): void {
  reserveExecution(db, reservation);
}

/**
 * Runs `spawn` inside one write transaction, only while the reservation still stands (pause
 * and destroy cancel reservations in theirs); null when it was cancelled first.
 */
export function whileReserved<T>(plan: RecordOf, spawn: () => T): T | null {
  return writeTransaction(plan.store.db, () => (mayLaunch(plan.store.db, plan.workspaceId, plan.execId) ? spawn() : null));
}

/** Records the workload's leader (in the caller's transaction); false when pause or destroy finished the reservation first. */
export function recordLeader(plan: RecordOf, pid: number, startTicks: number): boolean {
  return recordLaunch(plan.store.db, plan.workspaceId, plan.execId, pid, pid, startTicks);
}
