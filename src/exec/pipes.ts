import type { ControlReader } from "./controls.ts";
import { EventWriter } from "./events.ts";
import { releaseDirectories, type LaunchPlan } from "./prepare.ts";
import { spawnDirectory } from "../platform/directory.ts";
import type { SignalForwarder } from "./signals.ts";
import { releaseStdio } from "./stdio.ts";
import { sendSignal } from "../platform/process.ts";
import type { WorkloadIdentity } from "../platform/process-group.ts";
import { failWorkload, finishWorkload, startWorkload, type Outcome } from "./workload.ts";
import { launched, launchFailed } from "./launch.ts";

/** Pipes mode: the workload inherits fd 0/1/2 directly; fd 3 must reach EOF after the envelope. */
export async function runPipes(plan: LaunchPlan, controls: ControlReader, signals: SignalForwarder): Promise<Outcome> {
  const events = new EventWriter("pipes");
  const { argv } = plan;
  let proc;
  try {
    proc = Bun.spawn([plan.program, ...argv.slice(1)], {
      argv0: argv[0],
      cwd: spawnDirectory(plan.cwdFd),
      env: plan.env,
      detached: true,
      stdio: plan.sandbox?.stdio ?? ["inherit", "inherit", "inherit"],
    });
  } catch (error) {
    throw launchFailed(plan, error);
  } finally {
    releaseDirectories(plan);
  }
  const workload = await launched(plan, proc);
  releaseStdio();
  const identity = await startWorkload(plan, workload, events);
  // Straight to the group, no /proc scan: until the leader is reaped its group id cannot be
  // reused, so the check is just "not reaped yet" (our own child: Bun's view). Latency matters here.
  signals.attach((signal) => {
    if (workload.mayForward()) sendSignal(-identity.pgid, signal);
  });
  void expectControlEof(controls, identity, events);
  await workload.exited;
  signals.close();
  controls.cancel();
  return finishWorkload(plan, identity, workload, events);
}

/** In pipes mode any frame after the envelope is a protocol error. */
async function expectControlEof(controls: ControlReader, identity: WorkloadIdentity, events: EventWriter): Promise<void> {
  try {
    const frame = await controls.next();
    if (frame) failWorkload(identity, events, `unexpected ${frame.type} frame on fd 3 in pipes mode`);
  } catch (error) {
    failWorkload(identity, events, (error as Error).message);
  }
}
