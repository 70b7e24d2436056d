/**
 * A workspace's executions as a whole: stop them all (pause, destroy), end one (signal), reap
 * abandoned ones (reconcile). An execution with a cgroup is ended through it; one without is
 * ended through its process group and session, as far as they are provably its own.
 */
import type { Database } from "bun:sqlite";
import { dirname, join } from "node:path";
import { diagnose } from "../output.ts";
import { endCgroup, signalCgroup } from "../containment/cgroup-scope.ts";
import { childCgroups, isPopulated, removeCgroup } from "../platform/cgroup.ts";
import { signalAndWait, stopWorkload, type Ending } from "../containment/group-scope.ts";
import { holdsPid, isSameProcess, type ProcessIdentity } from "../platform/process.ts";
import { cancelReservations, markFinished, unfinishedExecutions, type ExecutionRecord } from "../store/executions.ts";
import { logLine } from "../log/runtime-log.ts";
import { writeTransaction } from "../store/db.ts";

/** The workload's leader as recorded (pid 0 until launched). */
export function leaderOf(record: ExecutionRecord): ProcessIdentity {
  return { pid: record.pid, startTicks: record.startTicks, bootId: record.bootId };
}

/** The wrapper that claimed the execution. */
export function wrapperOf(record: ExecutionRecord): ProcessIdentity {
  return { pid: record.wrapperPid, startTicks: record.wrapperStartTicks, bootId: record.bootId };
}

/** Says on stderr what process-group containment could not prove and so did not touch. */
function reportLeftAlone(record: ExecutionRecord, ending: Ending): void {
  if (ending.leftAlone === 0) return;
  diagnose(
    `execution ${JSON.stringify(record.execId)} of workspace ${JSON.stringify(record.workspaceId)}: its leader (pid ${record.pid}) is gone, so ${ending.leftAlone} process(es) still in its group or session cannot be proven to be its own and were left alone (process-group containment; cgroup containment ends them)`,
  );
}

/**
 * Sends `signal` to one execution and waits up to `timeoutMs` until it is gone; false when it
 * still runs. Through its cgroup, or its proven group and session members.
 */
export async function signalExecution(record: ExecutionRecord, signal: NodeJS.Signals, timeoutMs: number): Promise<boolean> {
  if (record.cgroup) {
    if (!(await signalCgroup(record.cgroup, signal, timeoutMs))) return false;
    removeCgroup(record.cgroup);
    return true;
  }
  // Without a cgroup, a reservation never launched anything: the gate runs nothing without its wrapper.
  if (record.pid === 0) return true;
  const ending = await signalAndWait(leaderOf(record), signal, timeoutMs);
  reportLeftAlone(record, ending);
  return ending.gone;
}

/** Ends one execution: SIGTERM, `graceMs`, SIGKILL (graceMs 0: SIGKILL at once). Throws if that fails. */
async function endExecution(record: ExecutionRecord, graceMs: number): Promise<void> {
  if (record.cgroup) {
    await endCgroup(record.cgroup, graceMs);
    removeCgroup(record.cgroup);
    return;
  }
  if (record.pid === 0) return;
  reportLeftAlone(record, await stopWorkload(leaderOf(record), graceMs));
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
  await Promise.all([...[...cgroups].map((dir) => endCgroup(dir, graceMs)), ...records.filter((record) => !record.cgroup).map((record) => endExecution(record, graceMs))]);
  for (const record of records) markFinished(db, record.workspaceId, record.execId);
  // The executions' own cgroups are empty now (a cancelled one may never have held anything).
  for (const dir of cgroups) for (const child of childCgroups(dir)) removeCgroup(join(dir, child));
  return records.length;
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
    await endExecution(record, 0);
    markFinished(db, record.workspaceId, record.execId);
    reaped++;
  }
  return reaped;
}

/**
 * True when the kernel says nothing of this execution is left, without signalling anything:
 * its cgroup is empty (or gone); under process groups, it never launched (the gate runs nothing
 * without its wrapper) or its leader no longer holds its pid (what is left of its group, if
 * anything, can no longer be proven its own: every operation leaves such processes alone).
 */
function hasEnded(record: ExecutionRecord): boolean {
  if (record.cgroup) return !isPopulated(record.cgroup);
  return record.pid === 0 || !holdsPid(leaderOf(record));
}

/**
 * The records of a workspace's executions that are over although nobody recorded it: the
 * wrapper is gone (it could not write its record: a full or read-only disk; or it was killed
 * once the workload had ended) and the kernel says nothing of the execution is left. Looks
 * only, outside any transaction: checking every live execution's wrapper is the slow part (one
 * /proc read each; 200 concurrent execs made it 14-18 ms of each launch's reservation, all of
 * it under the write lock: bench/README.md, `lockwait`), and what it finds stays true (a gone
 * wrapper never comes back, and nothing else puts a process into its execution's cgroup).
 */
export function endedExecutions(db: Database, workspaceId: string): ExecutionRecord[] {
  return unfinishedExecutions(db, workspaceId).filter((record) => !isSameProcess(wrapperOf(record)) && hasEnded(record));
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
    if (record.cgroup) removeCgroup(record.cgroup);
    logLine("warn", "settled", {
      execId: record.execId,
      workloadPid: record.pid || undefined,
      message: `its wrapper (pid ${record.wrapperPid}) is gone without recording its end, and nothing of it is left (${record.cgroup ? "its cgroup is empty" : "its leader is gone"}): recorded as finished, outcome unknown (the daemon had it on fd 4)`,
    });
    settled++;
  }
  return settled;
}
