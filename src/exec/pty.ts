import type { Subprocess } from "bun";
import type { Control, ResizeControl } from "../protocol/index.ts";
import { readProcess, sendSignal } from "../platform/process.ts";
import { markFinished } from "../store/executions.ts";
import type { ControlReader } from "./controls.ts";
import { EventWriter } from "./events.ts";
import { launchFailed } from "./launch.ts";
import { signalNumber } from "./mirror.ts";
import type { LaunchPlan } from "./prepare.ts";
import { ProgramError } from "./program.ts";
import { PtyOutput } from "./pty-output.ts";
import type { SignalForwarder } from "./signals.ts";
import { releaseStdio } from "./stdio.ts";
import { signalWorkload, type WorkloadIdentity } from "./terminate.ts";
import { failWorkload, finishWorkload, startWorkload, type Outcome } from "./workload.ts";

/** The terminal's EOF character (VEOF, ^D), sent once when the daemon closes fd 0. */
const EOF_CHARACTER = "\x04";
/** How long the master may stay open after the leader exited before we close it. */
const MASTER_DRAIN_MS = 300;

/** A signal frame's name must be a real signal; anything else is a protocol error. */
function checkSignalName(name: string): NodeJS.Signals {
  if (!/^SIG[A-Z0-9]+$/.test(name) || signalNumber(name) === undefined) throw new Error(`unsupported signal ${JSON.stringify(name)} in a PTY signal frame`);
  return name as NodeJS.Signals;
}

/**
 * PTY mode: the workload leads a session whose controlling terminal is a fresh PTY; fd 0 is
 * copied in, PTY output copied to fd 1, fd 3 keeps carrying resize and signal frames.
 */
export async function runPty(plan: LaunchPlan, controls: ControlReader, signals: SignalForwarder): Promise<Outcome> {
  const events = new EventWriter("pty");
  const early = takeEarlyControls(plan, controls, events);
  const stdio = plan.envelope.stdio as { rows: number; cols: number };
  const size = early.resizes.at(-1) ?? stdio;
  const output = new PtyOutput();
  const { argv } = plan;
  let proc: Subprocess;
  try {
    proc = Bun.spawn([plan.program, ...argv.slice(1)], {
      argv0: argv[0],
      cwd: plan.cwd,
      env: plan.env,
      terminal: { cols: size.cols, rows: size.rows, data: (_terminal, chunk) => output.write(chunk), exit: () => output.onMasterClosed() },
    });
  } catch (error) {
    throw launchFailed(plan, error);
  }
  const terminal = proc.terminal!;
  const identity = await startWorkload(plan, proc, events).catch((error) => {
    terminal.close();
    throw error;
  });
  output.attach(identity.pid);
  for (const resize of early.resizes) events.resized(resize.id);
  for (const signal of early.signals) signals.receive(signal);
  signals.attach((signal) => deliverPtySignal(identity, signal));
  const reaped = proc.exited;
  void pumpInput(terminal, reaped);
  void followControls(controls, identity, events, signals, terminal);
  await reaped;
  signals.close();
  controls.cancel();
  return finishWorkload(plan, identity, proc, events, async () => {
    output.releaseSlave();
    await output.waitMasterClosed(MASTER_DRAIN_MS);
    terminal.close();
    await output.finish();
    releaseStdio();
  });
}

/** Frames that came with the envelope: validated before anything is launched. */
function takeEarlyControls(plan: LaunchPlan, controls: ControlReader, events: EventWriter) {
  const resizes: ResizeControl[] = [];
  const signals: NodeJS.Signals[] = [];
  try {
    for (const frame of controls.takeBuffered()) {
      if (frame.type === "resize") resizes.push(frame);
      else if (frame.type === "signal") signals.push(checkSignalName(frame.signal));
      else throw new Error("a second spawn envelope on fd 3");
    }
  } catch (error) {
    markFinished(plan.store.db, plan.workspaceId, plan.execId);
    events.error((error as Error).message);
    events.close();
    throw new ProgramError(`${(error as Error).message}; nothing was launched`, 1);
  }
  return { resizes, signals };
}

/** Resize and signal frames after `started`; closing fd 3 is control EOF, not an error. */
async function followControls(
  controls: ControlReader,
  identity: WorkloadIdentity,
  events: EventWriter,
  signals: SignalForwarder,
  terminal: NonNullable<Subprocess["terminal"]>,
): Promise<void> {
  for (;;) {
    let frame: Control | null;
    try {
      frame = await controls.next();
      if (!frame) return;
      if (frame.type === "resize") {
        if (terminal.closed || events.sequence.eof) continue;
        terminal.resize(frame.cols, frame.rows);
        events.resized(frame.id);
      } else if (frame.type === "signal") {
        signals.receive(checkSignalName(frame.signal));
      } else {
        throw new Error("a second spawn envelope on fd 3");
      }
    } catch (error) {
      failWorkload(identity, events, (error as Error).message);
      return;
    }
  }
}

/** Copies fd 0 into the terminal; at EOF sends the EOF character once and keeps running. */
async function pumpInput(terminal: NonNullable<Subprocess["terminal"]>, reaped: Promise<unknown>): Promise<void> {
  const reader = Bun.file(0).stream().getReader();
  let done = false;
  void reaped.then(() => {
    done = true;
    reader.cancel().catch(() => {});
  });
  try {
    for (;;) {
      const { done: ended, value } = await reader.read();
      if (done || terminal.closed) return;
      if (ended) {
        terminal.write(EOF_CHARACTER);
        return;
      }
      terminal.write(value);
    }
  } catch {
    // fd 0 failing is the daemon going away; the workload's fate is decided elsewhere.
  }
}

/**
 * A signal for a PTY workload goes to the terminal's foreground group (a shell's running job)
 * and to the session leader's group; SIGKILL ends every member of the session.
 */
function deliverPtySignal(identity: WorkloadIdentity, signal: NodeJS.Signals): void {
  if (signal === "SIGKILL") {
    signalWorkload(identity, signal);
    return;
  }
  const leader = readProcess(identity.pid);
  sendSignal(-identity.pgid, signal);
  if (leader && leader.startTicks === identity.startTicks && leader.tpgid > 0 && leader.tpgid !== identity.pgid) {
    sendSignal(-leader.tpgid, signal);
  }
}
