import { fstatSync } from "node:fs";

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
  try {
    if (!fstatSync(fd).isCharacterDevice()) return false;
  } catch {
    return false;
  }
  return isTerminal(fd);
}
