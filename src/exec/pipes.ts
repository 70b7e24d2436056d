import type { ControlReader } from "./controls.ts";
import { EventWriter } from "./events.ts";
import { launchWorkload, type Launched } from "./launch.ts";
import type { LaunchPlan } from "./plan.ts";
import type { SignalForwarder } from "./signals.ts";
import { releaseStdio } from "./stdio.ts";
import { sendSignal } from "../platform/process.ts";
import { failWorkload, finishWorkload, refuseBeforeLaunch, startWorkload, type Outcome } from "./workload.ts";

/** Pipes mode: the workload inherits fd 0/1/2 directly; fd 3 must reach EOF after the envelope. */
export async function runPipes(plan: LaunchPlan, controls: ControlReader, signals: SignalForwarder): Promise<Outcome> {
  const events = new EventWriter("pipes");
  refuseEarlyBytes(plan, controls, events);
  const launched = await launchWorkload(plan, { detached: true, stdio: ["inherit", "inherit", "inherit"] });
  const { proc } = launched;
  releaseStdio();
  const identity = startWorkload(launched, events);
  // Straight to the group, no /proc scan: until the leader is reaped its group id cannot be
  // reused, so the check is just "not reaped yet" (launch.ts). Latency matters here.
  signals.attach((signal) => {
    if (launched.mayForward()) sendSignal(-identity.pid, signal);
  });
  void expectControlEof(controls, launched, events);
  await proc.exited;
  signals.close();
  controls.cancel();
  return finishWorkload(plan, launched, events);
}

/**
 * Anything after the envelope is a protocol error. What already came with it (the same write)
 * refuses the exec before launch, as in PTY mode; fd 3's EOF itself is not waited for.
 */
function refuseEarlyBytes(plan: LaunchPlan, controls: ControlReader, events: EventWriter): void {
  let problem: string | null = null;
  try {
    const [frame] = controls.takeBuffered();
    if (frame) problem = `unexpected ${frame.type} frame on fd 3 in pipes mode`;
    else if (controls.bufferedBytes > 0) problem = `unexpected bytes after the spawn envelope on fd 3 in pipes mode`;
  } catch (error) {
    problem = (error as Error).message;
  }
  if (problem !== null) throw refuseBeforeLaunch(plan, events, problem);
}

/** After launch, a frame on fd 3 is a protocol error too: the workload is killed. */
async function expectControlEof(controls: ControlReader, launched: Launched, events: EventWriter): Promise<void> {
  try {
    const frame = await controls.next();
    if (frame) failWorkload(launched, events, `unexpected ${frame.type} frame on fd 3 in pipes mode`);
  } catch (error) {
    failWorkload(launched, events, (error as Error).message);
  }
}
