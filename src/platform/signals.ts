/**
 * The signal table: the one place that says what a signal name is and which number it has on
 * this platform. Its names are the daemon's own (Node's `os.constants.signals`; Bun's is the
 * same table), so a name this table knows is a name the daemon accepts, and nothing else is:
 * not a number, not `SIGRTMIN+1`. The protocol's SignalName schema, the exit event, PTY signal
 * frames, the `signal` operation and every kill go through it.
 */
import { lazyOs } from "./lazy.ts";

function table(): Readonly<Record<string, number>> {
  return lazyOs().constants.signals as Record<string, number>;
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
