/** A workspace's executions as a whole: stop them all (pause, destroy), reap abandoned ones (reconcile). */
import type { Database } from "bun:sqlite";
import { isSameLiveProcess } from "../platform/process.ts";
import { markFinished, unfinishedExecutions, unfinishedExecutionsOfOwner, type ExecutionRecord } from "../store/executions.ts";
import { stopWorkload, workloadMembers, type WorkloadIdentity } from "../platform/process-group.ts";

/** The identity part of an execution record. */
export function identityOf(record: ExecutionRecord): WorkloadIdentity {
  return { pid: record.pid, pgid: record.pgid, startTicks: record.startTicks, bootId: record.bootId };
}

/**
 * Stops every live execution of a workspace (pause: grace then SIGKILL; destroy: graceMs 0)
 * and marks them finished. Returns only when all of them are gone.
 */
export async function stopWorkspaceExecutions(db: Database, workspaceId: string, graceMs: number): Promise<number> {
  const records = unfinishedExecutions(db, workspaceId);
  await Promise.all(records.map((record) => stopWorkload(identityOf(record), graceMs)));
  for (const record of records) markFinished(db, record.workspaceId, record.execId);
  return records.length;
}

/**
 * Reconcile's sweep, limited to one owner's workspaces: an unfinished execution whose workload is gone is marked finished;
 * one whose wrapper died is killed (nobody is left to report or clean it up).
 */
export async function reapAbandonedExecutions(db: Database, owner: string): Promise<number> {
  let reaped = 0;
  for (const record of unfinishedExecutionsOfOwner(db, owner)) {
    const alive = workloadMembers(identityOf(record)).length > 0;
    const wrapperAlive = isSameLiveProcess(record.wrapperPid, record.wrapperStartTicks);
    if (alive && wrapperAlive) continue;
    if (alive) await stopWorkload(identityOf(record), 0);
    markFinished(db, record.workspaceId, record.execId);
    reaped++;
  }
  return reaped;
}
