/** The human's terminal while `run --pty` runs: its size, and raw mode restored on every exit path. */
import { FD_NOT_OPEN, TERMINAL_HUNG_UP, tolerating } from "../platform/errno.ts";
import { isTerminal } from "../platform/tty.ts";

/** The size of the terminal on fd 1 (else fd 0), or the daemon's 80x24. */
export function terminalSize(): { rows: number; cols: number } {
  const stream = isTerminal(1) ? process.stdout : null;
  const rows = stream?.rows ?? 0;
  const cols = stream?.columns ?? 0;
  return rows > 0 && cols > 0 ? { rows, cols } : { rows: 24, cols: 80 };
}

/**
 * The human's terminal in raw mode while a PTY workload runs: every key (Ctrl-C included)
 * goes to the workload's terminal as a byte, whose line discipline makes the signals.
 */
export class RawTerminal {
  #raw = false;
  readonly #restore = () => this.restore();

  enable(): void {
    if (!isTerminal(0)) return;
    process.stdin.setRawMode(true);
    this.#raw = true;
    process.on("exit", this.#restore);
  }

  get raw(): boolean {
    return this.#raw;
  }

  /** Back to the mode we found; safe to call more than once, on any exit path. */
  restore(): void {
    if (!this.#raw) return;
    this.#raw = false;
    // The terminal went away (a hangup: EIO, or it is no terminal any more): nothing left to restore.
    tolerating([...TERMINAL_HUNG_UP, "ENOTTY", ...FD_NOT_OPEN], undefined, () => process.stdin.setRawMode(false));
  }
}
