/**
 * The part of a workload's life both modes share: proving its identity before `started`,
 * and turning its end into cleanup, `eof`, `exit` and the finished record.
 */
import type { Subprocess } from "bun";
import { bootId } from "../platform/process.ts";
import { markFinished, recordLaunch } from "../store/executions.ts";
import type { EventWriter } from "./events.ts";
import { confirmLeader } from "./identity.ts";
import type { LaunchPlan } from "./prepare.ts";
import { signalAndWait, stopWorkload, type WorkloadIdentity } from "../platform/process-group.ts";

/** Grace given to session members still alive after the leader exited. */
const LEFTOVER_GRACE_MS = 200;

/**
 * The launched workload as the wrapper follows it: the spawned process itself (directWorkload),
 * or the workload inside the Linux sandbox (src/exec/sandboxed.ts).
 */
export interface Launched {
  /** The workload leader's pid. */
  readonly pid: number;
  /** Resolves once the leader's end is known. */
  readonly exited: Promise<unknown>;
  readonly exitCode: number | null;
  readonly signalCode: string | null;
  /** SIGKILL for everything launched. */
  kill(): void;
  /** Whether signals may still go to the leader's group (its group id cannot have been reused). */
  mayForward(): boolean;
  /** The identity is recorded (sandboxed: the leader may now be reaped). */
  confirmed(): void;
  /** After cleanup: ends what the launch left (the sandbox) and waits until it is gone. */
  release(): Promise<void>;
  /** Set when the workload's end could not be learned. */
  readonly problem: string | null;
}

/** A workload spawned directly: our own child, whose group id lives until we reap it. */
export function directWorkload(proc: Subprocess): Launched {
  return {
    get pid() {
      return proc.pid;
    },
    exited: proc.exited,
    get exitCode() {
      return proc.exitCode;
    },
    get signalCode() {
      return proc.signalCode === null ? null : String(proc.signalCode);
    },
    kill: () => proc.kill("SIGKILL"),
    mayForward: () => proc.exitCode === null && proc.signalCode === null,
    confirmed: () => {},
    release: async () => {},
    problem: null,
  };
}

/** How a workload ended. */
export interface Outcome {
  code: number | null;
  signal: string | null;
}

/**
 * Confirms and records the identity, then emits `started`. On failure the workload is killed,
 * an error event is sent and the wrapper must exit without a lifecycle.
 */
export async function startWorkload(plan: LaunchPlan, proc: Launched, events: EventWriter): Promise<WorkloadIdentity> {
  let identity: WorkloadIdentity | undefined;
  try {
    const { info } = await confirmLeader(proc.pid, plan.wrapperStartTicks, plan.sandbox?.request.mode !== "pty");
    identity = { pid: info.pid, pgid: info.pgid, startTicks: info.startTicks, bootId: bootId() };
    if (!recordLaunch(plan.store.db, plan.workspaceId, plan.execId, info.pid, info.pgid, info.startTicks)) {
      throw new Error(`workspace ${JSON.stringify(plan.workspaceId)} was paused or destroyed while the workload launched`);
    }
  } catch (error) {
    if (identity) await stopWorkload(identity, 0).catch(() => {});
    proc.kill();
    await proc.exited;
    await proc.release().catch(() => {});
    markFinished(plan.store.db, plan.workspaceId, plan.execId);
    events.error((error as Error).message);
    events.close();
    throw error;
  }
  proc.confirmed();
  events.started(identity.pid);
  return identity;
}

/** After the leader was reaped: clean the session, record, then `eof` and `exit`. */
export async function finishWorkload(
  plan: LaunchPlan,
  identity: WorkloadIdentity,
  proc: Launched,
  events: EventWriter,
  beforeEof?: () => Promise<void>,
): Promise<Outcome> {
  const signal = proc.signalCode;
  const outcome: Outcome = { code: signal ? null : proc.exitCode, signal };
  if (outcome.code === null && outcome.signal === null) outcome.code = 1;
  if (!(await signalAndWait(identity, "SIGTERM", LEFTOVER_GRACE_MS))) {
    await stopWorkload(identity, 0).catch((error: Error) => events.error(error.message));
  }
  await proc.release().catch((error: Error) => events.error(error.message));
  if (proc.problem) events.error(proc.problem);
  if (beforeEof) await beforeEof().catch((error: Error) => events.error(error.message));
  markFinished(plan.store.db, plan.workspaceId, plan.execId, outcome);
  plan.store.db.close();
  events.eof();
  events.exit(outcome.code, outcome.signal);
  return outcome;
}

/** An internal or protocol failure after `started`: report once, kill the whole session. */
export function failWorkload(identity: WorkloadIdentity, events: EventWriter, message: string): void {
  events.error(message);
  void stopWorkload(identity, 0).catch(() => {});
}
