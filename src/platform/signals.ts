/**
 * The signal table: the one place that says what a signal name is and which number it has on
 * this platform. Its names are the daemon's own (Node's `os.constants.signals`; Bun's is the
 * same table), so a name this table knows is a name the daemon accepts, and nothing else is:
 * not a number, not `SIGRTMIN+1`. The protocol's SignalName schema, the exit event, PTY signal
 * frames, the `signal` operation and every kill go through it.
 */
import { lazyOs } from "./lazy.ts";
import { isLinux } from "./os.ts";

/**
 * Linux's table (x64 and arm64 number signals alike): exactly `os.constants.signals` of Node
 * (the daemon) and of Bun, in their order (test/platform/signals.test.ts compares them).
 * Written out because loading node:os costs every exec about 1 ms before its first signal
 * handler, and the wrapper needs the table right then.
 */
const LINUX: Readonly<Record<string, number>> = {
  SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGILL: 4, SIGTRAP: 5, SIGABRT: 6, SIGIOT: 6, SIGBUS: 7, SIGFPE: 8,
  SIGKILL: 9, SIGUSR1: 10, SIGSEGV: 11, SIGUSR2: 12, SIGPIPE: 13, SIGALRM: 14, SIGTERM: 15, SIGCHLD: 17,
  SIGSTKFLT: 16, SIGCONT: 18, SIGSTOP: 19, SIGTSTP: 20, SIGTTIN: 21, SIGTTOU: 22, SIGURG: 23, SIGXCPU: 24,
  SIGXFSZ: 25, SIGVTALRM: 26, SIGPROF: 27, SIGWINCH: 28, SIGIO: 29, SIGPOLL: 29, SIGPWR: 30, SIGSYS: 31,
};

/** This platform's table: Linux's above, elsewhere the engine's own (macOS: unverified here). */
function table(): Readonly<Record<string, number>> {
  return isLinux ? LINUX : (lazyOs().constants.signals as Record<string, number>);
}

/** True for a signal name this platform knows ("SIGTERM", also an alias such as "SIGIOT"); never a number. */
export function isSignalName(name: string): name is NodeJS.Signals {
  return name.startsWith("SIG") && Object.hasOwn(table(), name);
}

/** Why `name` is not a signal name (every message that refuses one says this), or null. */
export function signalNameProblem(name: string): string | null {
  return isSignalName(name) ? null : `${JSON.stringify(name)} is not a signal name (give one such as SIGTERM or SIGKILL, not a number)`;
}

/** Signal number for a name, or undefined for an unknown name. */
export function signalNumber(name: string): number | undefined {
  return Object.hasOwn(table(), name) ? table()[name] : undefined;
}

let byNumber: Map<number, NodeJS.Signals> | undefined;

/**
 * The name of signal `number` (the first the table lists: SIGABRT, not its alias SIGIOT), or
 * null when it has none: the real-time signals (SIGRTMIN… on Linux) are not in the table.
 */
export function signalNameOf(number: number): NodeJS.Signals | null {
  if (!byNumber) {
    byNumber = new Map();
    for (const [name, n] of Object.entries(table())) if (!byNumber.has(n)) byNumber.set(n, name as NodeJS.Signals);
  }
  return byNumber.get(number) ?? null;
}

/** Every name of the table, aliases included, in its order. */
export function signalNames(): NodeJS.Signals[] {
  return Object.keys(table()) as NodeJS.Signals[];
}
