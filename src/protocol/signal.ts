/**
 * Signals on the wire. A signal is always named, by a name of the signal table
 * (src/platform/signals.ts: the daemon's own os.constants.signals): the exit event's `signal`,
 * a PTY `signal` frame, the `signal` operation's --signal. A workload killed by a signal that
 * has no such name (Linux's real-time signals, SIGRTMIN…SIGRTMAX) is reported the one way the
 * daemon can take it: as the exit code 128+n a shell would show, with `signal: null`.
 */
import * as v from "valibot";
import { isSignalName, signalNameOf, signalNumber } from "../platform/signals.ts";

/** A signal name of the signal table, e.g. "SIGTERM". */
export const SignalName = v.pipe(
  v.string(),
  // Not the value: a control or request is outside input, and its text is not repeated back.
  v.check((name) => isSignalName(name), "not a signal name (give one such as SIGTERM or SIGKILL, not a number)"),
);

/** The fd 4 exit status of a process, both keys always present. */
export interface ExitStatus {
  code: number | null;
  signal: string | null;
}

/**
 * How a death by `signal` (a name, or the number Bun gives for a signal without one) is
 * reported: by its canonical name, or as code 128+n when the table has no name for it.
 */
export function exitBySignal(signal: string | number): ExitStatus {
  const number = typeof signal === "number" ? signal : signalNumber(signal);
  const name = number === undefined ? null : signalNameOf(number);
  if (name !== null) return { code: null, signal: name };
  return { code: number === undefined ? 1 : 128 + number, signal: null };
}
