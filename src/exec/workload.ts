/**
 * The part of a workload's life both modes share: proving its identity before `started`,
 * and turning its end into cleanup, `eof`, `exit` and the finished record.
 */
import type { ProcessIdentity } from "../platform/process.ts";
import { markFinished } from "../store/executions.ts";
import type { EventWriter } from "./events.ts";
import type { Launched } from "./launch.ts";
import type { LaunchPlan } from "./prepare.ts";

/** Grace given to what is left of the execution after the leader exited. */
const LEFTOVER_GRACE_MS = 200;

/** How a workload ended. */
export interface Outcome {
  code: number | null;
  signal: string | null;
}

/** The workload is launched, contained and on record (launch.ts checked it leads its session): `started`. */
export function startWorkload(launched: Launched, events: EventWriter): ProcessIdentity {
  events.started(launched.leader.pid);
  return launched.leader;
}

/** After the leader was reaped: end what is left of the execution, record, then `eof` and `exit`. */
export async function finishWorkload(plan: LaunchPlan, launched: Launched, events: EventWriter, beforeEof?: () => Promise<void>): Promise<Outcome> {
  const { proc } = launched;
  const signal = proc.signalCode === null ? null : String(proc.signalCode);
  const outcome: Outcome = { code: signal ? null : proc.exitCode, signal };
  if (outcome.code === null && outcome.signal === null) outcome.code = 1;
  await launched.scope.finish(LEFTOVER_GRACE_MS).catch((error: Error) => events.error(error.message));
  if (beforeEof) await beforeEof().catch((error: Error) => events.error(error.message));
  markFinished(plan.store.db, plan.workspaceId, plan.execId, outcome);
  plan.store.db.close();
  events.eof();
  events.exit(outcome.code, outcome.signal);
  return outcome;
}

/** An internal or protocol failure after `started`: report once, kill the whole execution. */
export function failWorkload(launched: Launched, events: EventWriter, message: string): void {
  events.error(message);
  launched.scope.killAll().catch((error: Error) => events.error(error.message));
}
