/**
 * Signals received by the wrapper. Like dumb-init, the wrapper forwards every signal it can
 * catch to the workload, except the ones it needs for itself (WRAPPER_OWN says which, and why).
 * Handlers are installed before anything else happens (a SIGTERM that lands before its handler
 * would kill the wrapper and orphan the workload), and what arrives before the workload exists
 * is queued, then delivered in order.
 */
import { ignoreSignal, realtimeSignals } from "../platform/libc/processes.ts";
import { signalNames, signalNumber } from "../platform/signals.ts";
import { LIBRARY_MISSING, tolerating } from "../platform/errno.ts";

/** What the daemon sends a pipes wrapper (SPEC §4): also all that the daemon-side `run` forwards. */
export const DAEMON_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * Terminal job control. Forwarded in pipes mode. In PTY mode the workload's terminal makes
 * these itself (^Z is SIGTSTP from its line discipline) and the daemon can send any of them
 * as a `signal` frame, so when they are sent to the wrapper they stay with it: ignored.
 */
const JOB_CONTROL = ["SIGTSTP", "SIGTTIN", "SIGTTOU"] as const;

/** Never forwarded: the wrapper's own, with the reason. Every other name of the table is forwarded. */
export const WRAPPER_OWN: Readonly<Record<string, string>> = {
  SIGKILL: "cannot be caught",
  SIGSTOP: "cannot be caught",
  SIGCHLD: "the wrapper's own child ended (Bun reaps it)",
  SIGPIPE: "a write of the wrapper's own (fd 4, the log) found its reader gone; ignored",
  SIGXFSZ: "a write of the wrapper's own passed its file size limit; Bun ignores it",
  SIGILL: "a fault of the wrapper's own: the engine's crash handler (tini does not forward faults either)",
  SIGTRAP: "a fault of the wrapper's own: the engine's crash handler",
  SIGABRT: "the wrapper's own abort(): the engine's crash handler",
  SIGIOT: "SIGABRT's other name",
  SIGBUS: "a fault of the wrapper's own: the engine's crash handler",
  SIGFPE: "a fault of the wrapper's own: the engine's crash handler",
  SIGSEGV: "a fault of the wrapper's own: the engine's crash handler",
  SIGSYS: "a fault of the wrapper's own: the engine's crash handler",
  SIGEMT: "a fault of the wrapper's own (macOS)",
  SIGPWR: "the JavaScript engine's own (JavaScriptCore suspends its threads with it)",
  SIGSTKFLT: "the engine cannot catch it: ignored, so that it does not kill the wrapper",
  SIGPOLL: "SIGIO's other name",
  SIGLOST: "not sent on Linux or macOS",
  SIGUNUSED: "SIGSYS's other name",
};

/** Named signals the engine has no handler for: ignored (SIG_IGN) so they cannot kill the wrapper. */
const UNCATCHABLE = ["SIGSTKFLT"] as const;

/** What the wrapper catches to forward: the signal table less the wrapper's own, and in PTY mode less job control. */
export function forwardedSignals(mode: "pipes" | "pty"): NodeJS.Signals[] {
  const kept: readonly string[] = mode === "pipes" ? [] : JOB_CONTROL;
  return signalNames().filter((name) => !Object.hasOwn(WRAPPER_OWN, name) && !kept.includes(name));
}

/** SIG_IGN for what the engine cannot catch, so that they cannot kill the wrapper. */
function ignoreUncatchable(): void {
  // libc cannot be loaded (dlopen): those signals keep their default action. Not said on fd 2,
  // which may already be the workload's stderr to the daemon; nothing else depends on it.
  tolerating(LIBRARY_MISSING, undefined, () => {
    for (const number of [...realtimeSignals(), ...UNCATCHABLE.map(signalNumber)]) if (number !== undefined) ignoreSignal(number);
  });
}

type Deliver = (signal: NodeJS.Signals) => void;

export class SignalForwarder {
  #deliver: Deliver | null = null;
  #queue: NodeJS.Signals[] = [];
  #closed = false;
  /** PTY mode: job-control signals sent to the wrapper are not forwarded. */
  #kept: ReadonlySet<string> = new Set();

  /**
   * Installs the handlers; call first thing in `exec`, before the mode is known (so the job
   * control signals are caught too, and kept in PTY mode by keepJobControl). Real-time signals
   * have no name the engine can catch: they are ignored, so they cannot kill the wrapper.
   */
  install(): this {
    for (const signal of forwardedSignals("pipes")) process.on(signal, () => this.#caught(signal));
    process.on("SIGPIPE", () => {
      // A closed fd 4 or log: the write that hit it reports EPIPE itself.
    });
    ignoreUncatchable();
    return this;
  }

  /** PTY mode: SIGTSTP/SIGTTIN/SIGTTOU sent to the wrapper stay with it, also those already queued. */
  keepJobControl(): void {
    this.#kept = new Set(JOB_CONTROL);
    this.#queue = this.#queue.filter((signal) => !this.#kept.has(signal));
  }

  #caught(signal: NodeJS.Signals): void {
    if (!this.#kept.has(signal)) this.receive(signal);
  }

  /** A signal for the workload, from the wrapper's own handlers or a PTY control frame. */
  receive(signal: NodeJS.Signals): void {
    if (this.#closed) return;
    if (this.#deliver) this.#deliver(signal);
    else this.#queue.push(signal);
  }

  /** The workload exists: deliver the queue, then everything that follows. */
  attach(deliver: Deliver): void {
    this.#deliver = deliver;
    const queued = this.#queue;
    this.#queue = [];
    for (const signal of queued) deliver(signal);
  }

  /** The workload was reaped: never signal it again. */
  close(): void {
    this.#closed = true;
    this.#deliver = null;
    this.#queue = [];
  }
}
