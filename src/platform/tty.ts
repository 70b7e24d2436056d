import { FD_NOT_OPEN, tolerating } from "./errno.ts";
import { lazyFs } from "./lazy.ts";

/** Whether a descriptor is a terminal, without loading node:tty at start-up (see lazy.ts). */
export function isTerminal(fd: number): boolean {
  return (require("node:tty") as typeof import("node:tty")).isatty(fd);
}

/**
 * isTerminal for the protocol's hot path: a terminal is a character device, so the daemon's
 * pipes are told apart by one fstat and node:tty (~5 ms to load) is loaded only for a
 * character device (a terminal, or /dev/null).
 */
export function isTerminalQuick(fd: number): boolean {
  if (!tolerating(FD_NOT_OPEN, false, () => lazyFs().fstatSync(fd).isCharacterDevice())) return false;
  return isTerminal(fd);
}

/** c_oflag's OPOST (output processing, e.g. \n → \r\n): 1 on Linux and macOS alike. */
const OPOST = 0x1;

/** Whether a terminal with these output flags (c_oflag) processes its output. */
export function processesOutput(outputFlags: number): boolean {
  return (outputFlags & OPOST) !== 0;
}
