import type { Invocation } from "../argv.ts";
import { ControlReader, readSpawnEnvelope, startWrapper } from "../exec/controls.ts";
import { mirrorExit } from "../exec/mirror.ts";
import { runPipes } from "../exec/pipes.ts";
import { runPty } from "../exec/pty.ts";
import { primeOwnCgroup } from "../containment/cgroup-scope.ts";
import { prepareLaunch } from "../exec/prepare.ts";
import { NotLaunched } from "../exec/program.ts";
import { diagnose } from "../output.ts";
import { validOptions } from "../options.ts";
import type { SpawnEnvelope } from "../protocol/index.ts";
import { mark } from "../trace.ts";
import { attachExecLog, logExecExited, logExecFailed, logExecRefused } from "../log/call-log.ts";

/**
 * `exec`: read the spawn envelope from fd 3, launch the workload on fd 0/1/2, report its
 * lifecycle on fd 4, then die the way it died.
 */
export async function exec(invocation: Invocation): Promise<number> {
  const signals = startWrapper();
  primeOwnCgroup();
  mark("signals, fds, prime");
  const controls = new ControlReader();
  const envelope = await readSpawnEnvelope(controls, invocation);
  mark("envelope");
  if (envelope.stdio.kind === "pty") signals.keepJobControl();
  const facts = { mode: envelope.stdio.kind, purpose: envelope.purpose.kind };
  logTo(invocation, envelope);
  const run = envelope.stdio.kind === "pty" ? runPty : runPipes;
  let plan;
  let outcome;
  try {
    plan = await prepareLaunch(invocation.flags.get("workspace-id")!, envelope);
    outcome = await run(plan, controls, signals);
  } catch (error) {
    // Whatever stops prepareLaunch refuses the exec; after it, only NotLaunched does.
    if (!plan || error instanceof NotLaunched) return refused(facts, error);
    logExecFailed(facts, error);
    throw error;
  }
  logExecExited(facts, outcome.code, outcome.signal);
  mark("log line");
  return mirrorExit(outcome.code, outcome.signal, plan.store.abandoned === true);
}

/** The runtime log of the home the envelope's options select; bad options are prepareLaunch's to report. */
function logTo(invocation: Invocation, envelope: SpawnEnvelope): void {
  const options = validOptions(envelope.options);
  if (options !== null) attachExecLog(invocation, envelope, options);
}

/** Nothing was launched: log why, then answer like before (a NotLaunched's code, else thrown). */
function refused(facts: { mode: string; purpose: string }, error: unknown): number {
  logExecRefused(facts, error instanceof NotLaunched ? error.code : 1, error);
  if (!(error instanceof NotLaunched)) throw error;
  diagnose(error.message);
  return error.code;
}
