/**
 * Executions as their records name them, for the operations that run after (or without) their
 * wrapper: end one (signal), stop a workspace's all (pause, destroy), reap abandoned ones
 * (reconcile), and settle the records of those already over. Each record's containment is its
 * scope (scopeOf): its cgroup when it has one, else its process group and session, as far as
 * they are provably its own.
 */
import type { Database } from "bun:sqlite";
import { dirname } from "node:path";
import { diagnose } from "../output.ts";
import { isSameProcess, type ProcessIdentity } from "../platform/process.ts";
import { cancelReservations, markFinished, unfinishedExecutions, type ExecutionRecord } from "../store/executions.ts";
import { logLine } from "../log/runtime-log.ts";
import { writeTransaction } from "../store/db.ts";
import { CgroupScope, endCgroup, removeChildCgroups, removeWorkspaceCgroup } from "./cgroup-scope.ts";
import { GroupScope } from "./group-scope.ts";
import type { ExecutionScope } from "./scope.ts";

/** The workload's leader as recorded (pid 0 until launched). */
export function leaderOf(record: ExecutionRecord): ProcessIdentity {
  return { pid: record.pid, startTicks: record.startTicks, bootId: record.bootId };
}

/** The wrapper that claimed the execution. */
export function wrapperOf(record: ExecutionRecord): ProcessIdentity {
  return { pid: record.wrapperPid, startTicks: record.wrapperStartTicks, bootId: record.bootId };
}

/** The recorded execution's containment: its cgroup, or its leader's proven group and session. */
export function scopeOf(record: ExecutionRecord): ExecutionScope {
  if (record.cgroup) return new CgroupScope(record.cgroup);
  return new GroupScope(leaderOf(record), { leftAlone: (count) => reportLeftAlone(record, count) });
}

/** Says on stderr what process-group containment could not prove and so did not touch. */
function reportLeftAlone(record: ExecutionRecord, count: number): void {
  diagnose(
    `execution ${JSON.stringify(record.execId)} of workspace ${JSON.stringify(record.workspaceId)}: its leader (pid ${record.pid}) is gone, so ${count} process(es) still in its group or session cannot be proven to be its own and were left alone (process-group containment; cgroup containment ends them)`,
  );
}

/**
 * Stops every execution of a workspace (pause: grace then SIGKILL; destroy: graceMs 0) and
 * marks them finished; returns only when all are gone. The caller has already made the
 * workspace non-ready, so no reservation appears any more. Cancelling the pending ones in
 * one write transaction first means none of their wrappers launches after it, and none is
 * inside the workspace cgroup, which is then ended as a whole: every execution of it, one
 * launching right now, and whatever escaped its session.
 */
export async function stopWorkspaceExecutions(db: Database, workspaceId: string, graceMs: number, workspaceCgroup: string | null): Promise<number> {
  const before = unfinishedExecutions(db, workspaceId);
  writeTransaction(db, () => cancelReservations(db, workspaceId));
  const records = unfinishedExecutions(db, workspaceId);
  const cgroups = new Set([workspaceCgroup, ...before.map((record) => record.cgroup && dirname(record.cgroup))].filter((dir): dir is string => !!dir));
  await Promise.all([...[...cgroups].map((dir) => endCgroup(dir, graceMs)), ...records.filter((record) => !record.cgroup).map((record) => scopeOf(record).end(graceMs))]);
  for (const record of records) markFinished(db, record.workspaceId, record.execId);
  // The executions' own cgroups are empty now (a cancelled one may never have held anything).
  for (const dir of cgroups) removeChildCgroups(dir);
  return records.length;
}

/**
 * What destroy asks (and a create that takes over a dead one): every execution SIGKILLed and
 * waited for, then the workspace's cgroup removed, and the home's when no workspace is left in it.
 */
export async function endWorkspaceExecutions(db: Database, workspaceId: string, workspaceCgroup: string | null): Promise<void> {
  await stopWorkspaceExecutions(db, workspaceId, 0, workspaceCgroup);
  if (workspaceCgroup) removeWorkspaceCgroup(workspaceCgroup);
}

/**
 * Reconcile's sweep, limited to the workspaces in its scope. An execution whose wrapper lives is the
 * wrapper's to finish (it may be launching right now); otherwise what is left of it is ended
 * (nobody is left to report or clean it up) and the record marked finished.
 */
export async function reapAbandonedExecutions(db: Database, workspaceIds: readonly string[]): Promise<number> {
  let reaped = 0;
  for (const record of workspaceIds.flatMap((id) => unfinishedExecutions(db, id))) {
    if (isSameProcess(wrapperOf(record))) continue;
    await scopeOf(record).end(0);
    markFinished(db, record.workspaceId, record.execId);
    reaped++;
  }
  return reaped;
}

/**
 * The records of a workspace's executions that are over although nobody recorded it: the
 * wrapper is gone (it could not write its record: a full or read-only disk; or it was killed
 * once the workload had ended) and the kernel says nothing of the execution is left (its
 * cgroup is empty or gone; under process groups, it never launched, or its leader no longer
 * holds its pid: every operation leaves what is left of its group alone). Looks only, outside
 * any transaction: checking every live execution's wrapper is the slow part (one /proc read
 * each; 200 concurrent execs made it 14-18 ms of each launch's reservation, all of it under
 * the write lock: bench/README.md, `lockwait`), and what it finds stays true (a gone wrapper
 * never comes back, and nothing else puts a process into its execution's cgroup).
 */
export function endedExecutions(db: Database, workspaceId: string): ExecutionRecord[] {
  return unfinishedExecutions(db, workspaceId).filter((record) => !isSameProcess(wrapperOf(record)) && scopeOf(record).hasEnded());
}

/**
 * Finishes the records endedExecutions found, each unless someone finished it meanwhile. Kills
 * nothing: an execution with a process left is signal's and reconcile's to end. An empty cgroup
 * is removed. Call inside a write transaction; returns how many records it finished.
 */
export function settleEnded(db: Database, ended: readonly ExecutionRecord[]): number {
  let settled = 0;
  for (const record of ended) {
    if (!markFinished(db, record.workspaceId, record.execId)) continue;
    scopeOf(record).remove();
    logLine("warn", "settled", {
      execId: record.execId,
      workloadPid: record.pid || undefined,
      message: `its wrapper (pid ${record.wrapperPid}) is gone without recording its end, and nothing of it is left (${record.cgroup ? "its cgroup is empty" : "its leader is gone"}): recorded as finished, outcome unknown (the daemon had it on fd 4)`,
    });
    settled++;
  }
  return settled;
}
