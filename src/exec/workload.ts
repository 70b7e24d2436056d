/**
 * The part of a workload's life both modes share: refusing before launch, proving its
 * identity before `started`, and turning its end into cleanup, the record, `eof` and `exit`.
 */
import type { ProcessIdentity } from "../platform/process.ts";
import { exitBySignal, type ExitStatus } from "../protocol/index.ts";
import type { EventWriter } from "./events.ts";
import { releaseDirectories, type LaunchPlan } from "./plan.ts";
import { PreLaunchProtocolError } from "./program.ts";
import { closeEgress, releaseReservation, type Launched } from "./launch.ts";
import { finishRecord } from "./record.ts";
import { logLine } from "../log/runtime-log.ts";
import { mark } from "../trace.ts";

/** Grace given to what is left of the execution after the leader exited. */
const LEFTOVER_GRACE_MS = 200;

/** How a workload ended: exactly what the fd 4 `exit` says. */
export type Outcome = ExitStatus;

/**
 * A protocol failure found before launch (a bad frame with the envelope): nothing runs. The
 * record is finished, the plan's directories and (empty) cgroup released, one `error` event is
 * sent and fd 4 closed; the caller throws the result.
 */
export function refuseBeforeLaunch(plan: LaunchPlan, events: EventWriter, message: string): PreLaunchProtocolError {
  releaseReservation(plan);
  releaseDirectories(plan);
  events.error(message);
  events.close();
  return new PreLaunchProtocolError(`${message}; nothing was launched`);
}

/** The workload is launched, contained and on record (launch.ts checked it leads its session): `started`. */
export function startWorkload(launched: Launched, events: EventWriter): ProcessIdentity {
  events.started(launched.leader.pid);
  mark("started");
  return launched.leader;
}

/** What the reaped leader's status says: its code, its signal's name, or 128+n for a signal without one. */
function outcomeOf(launched: Launched): Outcome {
  const { proc } = launched;
  if (proc.signalCode !== null) return exitBySignal(proc.signalCode);
  return { code: proc.exitCode ?? 1, signal: null };
}

/**
 * After the leader was reaped: end what is left of the execution, close its network proxy
 * (under an allowlist), let the mode finish (`beforeEof`: the PTY's terminal), bring a sandboxed
 * workspace's git work into the user's repository, record, then `eof` and `exit`, then close
 * the store. Nothing here may keep `eof` and `exit` from the daemon: cleanup failures become an
 * error event, a store that refuses the record is reported (record.ts), and git's word on the
 * workspace's commits is the runtime log's and the state file's (sandbox/git/sync-out.ts).
 */
export async function finishWorkload(plan: LaunchPlan, launched: Launched, events: EventWriter, beforeEof?: () => Promise<void>): Promise<Outcome> {
  mark("leader reaped");
  const outcome = outcomeOf(launched);
  await launched.scope.end(LEFTOVER_GRACE_MS).catch((error: Error) => events.error(error.message));
  mark("scope.end");
  await closeEgress(plan);
  mark("egress closed");
  if (beforeEof) await beforeEof().catch((error: Error) => events.error(error.message));
  if (plan.sandbox?.git) await bringGitBack(plan.sandbox.git);
  mark("terminal, git back");
  finishRecord(plan, outcome);
  mark("record");
  events.eof();
  events.exit(outcome.code, outcome.signal);
  mark("exit event");
  // The record is committed above; what the close adds is its checkpoint into the database
  // file (2–4 ms of writes and fsyncs), which the daemon need not wait for (bench/README.md).
  // A store found unwritable is left alone: the exit releases it.
  if (!plan.store.abandoned) plan.store.db.close();
  mark("store closed");
  return outcome;
}

/**
 * syncOut, whose failures are logged: the exec's own outcome stands. Loaded here, by the
 * sandboxed execs that have a private git dir: the others never evaluate the sync's modules.
 */
async function bringGitBack(git: NonNullable<NonNullable<LaunchPlan["sandbox"]>["git"]>): Promise<void> {
  try {
    const { syncOut } = await import("../sandbox/git/sync-out.ts");
    syncOut(git);
  } catch (error) {
    logLine("error", "git-error", { workspaceId: git.workspaceId, message: `the workspace's git work was not brought into your repository: ${(error as Error).message}` });
  }
}

/** An internal or protocol failure after `started`: report once, kill the whole execution. */
export function failWorkload(launched: Launched, events: EventWriter, message: string): void {
  events.error(message);
  launched.scope.killAll().catch((error: Error) => events.error(error.message));
}
