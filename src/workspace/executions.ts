/** A workspace's executions as a whole: stop them all (pause, destroy), reap abandoned ones (reconcile). */
import type { Database } from "bun:sqlite";
import { isSameLiveProcess } from "../platform/process.ts";
import { cancelReservation, markFinished, unfinishedExecutions, type ExecutionRecord } from "../store/executions.ts";
import { stopWorkload, workloadMembers, type WorkloadIdentity } from "../platform/process-group.ts";

/** The identity part of an execution record. */
export function identityOf(record: ExecutionRecord): WorkloadIdentity {
  return { pid: record.pid, pgid: record.pgid, startTicks: record.startTicks, bootId: record.bootId };
}

/**
 * Stops every live execution of a workspace (pause: grace then SIGKILL; destroy: graceMs 0)
 * and marks them finished. Returns only when all of them are gone. The caller has already made
 * the workspace non-ready, so no new reservation appears; one still launching is cancelled, or,
 * if it recorded its launch first, stopped on the next pass.
 */
export async function stopWorkspaceExecutions(db: Database, workspaceId: string, graceMs: number): Promise<number> {
  let stopped = 0;
  for (;;) {
    const records = unfinishedExecutions(db, workspaceId);
    if (records.length === 0) return stopped;
    const launched = records.filter((record) => record.pid !== 0);
    await Promise.all(launched.map((record) => stopWorkload(identityOf(record), graceMs)));
    for (const record of launched) markFinished(db, record.workspaceId, record.execId);
    // A reservation that launched meanwhile is not cancelled; the next pass stops it.
    for (const record of records) if (record.pid === 0) cancelReservation(db, record.workspaceId, record.execId);
    stopped += launched.length;
  }
}

/**
 * Reconcile's sweep, limited to the workspaces in its scope. An execution whose wrapper lives is the
 * wrapper's to finish (it may be launching right now); otherwise a live workload is killed
 * (nobody is left to report or clean it up) and the record marked finished.
 */
export async function reapAbandonedExecutions(db: Database, workspaceIds: readonly string[]): Promise<number> {
  let reaped = 0;
  for (const record of workspaceIds.flatMap((id) => unfinishedExecutions(db, id))) {
    if (isSameLiveProcess(record.wrapperPid, record.wrapperStartTicks)) continue;
    if (workloadMembers(identityOf(record)).length > 0) await stopWorkload(identityOf(record), 0);
    markFinished(db, record.workspaceId, record.execId);
    reaped++;
  }
  return reaped;
}
