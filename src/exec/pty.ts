import type { Subprocess } from "bun";
import type { ResizeControl } from "../protocol/index.ts";
import { hasErrno, PEER_GONE } from "../platform/errno.ts";
import { processOf, sendSignal, type ProcessIdentity } from "../platform/process.ts";
import type { ControlReader } from "./controls.ts";
import { EventWriter } from "./events.ts";
import { launchWorkload, type Launched } from "./launch.ts";
import type { LaunchPlan } from "./plan.ts";
import { PtyOutput } from "./pty-output.ts";
import type { SignalForwarder } from "./signals.ts";
import { releaseStdio } from "./stdio.ts";
import { failWorkload, finishWorkload, refuseBeforeLaunch, startWorkload, type Outcome } from "./workload.ts";

/** The terminal's EOF character (VEOF, ^D), sent once when the daemon closes fd 0. */
const EOF_CHARACTER = "\x04";
/** How long the master may stay open after the leader exited before we close it. */
const MASTER_DRAIN_MS = 300;
/** How long `eof` waits for fd 1 to take the last output; a daemon not reading gets it after `exit`. */
const OUTPUT_SETTLE_MS = 250;
/** How long the wrapper waits, after `exit`, for the daemon to close fd 0 and fd 3 (it does on exit). */
const HANGUP_WAIT_MS = 250;

/** Set once the leader was reaped: input is then drained, no longer forwarded. */
interface Session {
  ended: boolean;
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
  const launched = await launchWorkload(plan, {
    terminal: { cols: size.cols, rows: size.rows, data: (_terminal, chunk) => output.write(chunk), exit: () => output.onMasterClosed() },
  });
  const { proc } = launched;
  const terminal = proc.terminal!;
  const identity = startWorkload(launched, events);
  output.attach(identity.pid, launched.scope, terminal);
  for (const resize of early.resizes) events.resized(resize.id);
  for (const signal of early.signals) signals.receive(signal);
  signals.attach((signal) => deliverPtySignal(launched, signal));
  const session: Session = { ended: false };
  // They run beside the workload: a failure that is not the daemon going away fails the
  // execution, reported on fd 4 (as pipes mode's fd 3 watch does), never an unhandled rejection.
  const input = pumpInput(terminal, session).catch((error: Error) => failWorkload(launched, events, `reading fd 0 failed: ${error.message}`));
  const control = followControls(controls, launched, events, signals, terminal).catch((error: Error) => failWorkload(launched, events, `reading fd 3 failed: ${error.message}`));
  await proc.exited;
  session.ended = true;
  signals.close();
  const outcome = await finishWorkload(plan, launched, events, async () => {
    await output.releaseSlave();
    await output.waitMasterClosed(MASTER_DRAIN_MS);
    terminal.close();
    await output.settle(OUTPUT_SETTLE_MS);
  });
  // The tail a stalled daemon has not read yet; `exit` was not held back for it. A failure of
  // fd 1 (ENOSPC, EIO) comes after `exit`: it goes to the runtime log, and the wrapper still
  // drains and mirrors the workload's end, which fd 4 already gave.
  await output.finish().catch((error: Error) => events.error(`writing the terminal's output to fd 1 failed: ${error.message}`));
  // Bytes left unread on a socket we close reset the daemon's end (ECONNRESET); it closes
  // fd 0 and fd 3 when it sees `exit`, so drain them until then, briefly.
  await Promise.race([Promise.all([input, control]), Bun.sleep(HANGUP_WAIT_MS)]);
  releaseStdio();
  return outcome;
}

/** Frames that came with the envelope: validated before anything is launched. */
function takeEarlyControls(plan: LaunchPlan, controls: ControlReader, events: EventWriter) {
  const resizes: ResizeControl[] = [];
  const signals: NodeJS.Signals[] = [];
  try {
    for (const frame of controls.takeBuffered()) {
      if (frame.type === "resize") resizes.push(frame);
      else if (frame.type === "signal") signals.push(frame.signal as NodeJS.Signals);
      else throw new Error("a second spawn envelope on fd 3");
    }
  } catch (error) {
    throw refuseBeforeLaunch(plan, events, (error as Error).message);
  }
  return { resizes, signals };
}

/**
 * Resize and signal frames after `started`, until the daemon closes fd 3 (control EOF, not an
 * error). A resize is acknowledged whenever that is still legal (before `eof`), even once the
 * terminal is gone: the daemon holds keyboard input until the ack. After a bad frame fd 3 is
 * only drained, so the daemon's end is never reset by bytes we left unread.
 */
async function followControls(
  controls: ControlReader,
  launched: Launched,
  events: EventWriter,
  signals: SignalForwarder,
  terminal: NonNullable<Subprocess["terminal"]>,
): Promise<void> {
  try {
    for (let frame = await controls.next(); frame; frame = await controls.next()) {
      if (frame.type === "resize") {
        if (events.sequence.eof) continue;
        if (!terminal.closed) terminal.resize(frame.cols, frame.rows);
        events.resized(frame.id);
      } else if (frame.type === "signal") {
        signals.receive(frame.signal as NodeJS.Signals);
      } else {
        throw new Error("a second spawn envelope on fd 3");
      }
    }
  } catch (error) {
    failWorkload(launched, events, (error as Error).message);
    await controls.drain();
  }
}

/**
 * Copies fd 0 into the terminal unchanged. At EOF it sends the terminal's EOF character once
 * (a canonical-mode reader then sees end-of-file; in raw mode it is just the byte 0x04) and
 * keeps the workload running. Once the leader is reaped input is read and discarded.
 */
async function pumpInput(terminal: NonNullable<Subprocess["terminal"]>, session: Session): Promise<void> {
  const reader = Bun.file(0).stream().getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      const open = !session.ended && !terminal.closed;
      if (done) {
        if (open) terminal.write(EOF_CHARACTER);
        return;
      }
      if (open) terminal.write(value);
    }
  } catch (error) {
    // fd 0 failing is the daemon going away; the workload's fate is decided elsewhere.
    if (!hasErrno(error, PEER_GONE)) throw error;
  }
}

/**
 * A signal for a PTY workload goes to the terminal's foreground group (a shell's running job)
 * and to the session leader's group; SIGKILL ends the whole execution (its cgroup, or every
 * proven member of its session). Only delivered while the leader is unreaped: its group and
 * session ids cannot be anyone else's then.
 */
function deliverPtySignal(launched: Launched, signal: NodeJS.Signals): void {
  if (signal === "SIGKILL") {
    launched.scope.killAll().catch(() => {
      // Reported by the cleanup that follows the leader's end.
    });
    return;
  }
  if (!launched.mayForward()) return;
  const identity: ProcessIdentity = launched.leader;
  const leader = processOf(identity);
  sendSignal(-identity.pid, signal);
  if (leader && leader.tpgid > 0 && leader.tpgid !== identity.pid) {
    sendSignal(-leader.tpgid, signal);
  }
}
