import { closeSync, constants, openSync } from "node:fs";
import { setTerminalOutput } from "../platform/libc.ts";

/** The wrapper's stdout. In PTY mode only the wrapper writes it, so a non-blocking sink is safe. */
const STDOUT_FD = 1;

/**
 * Copies PTY output to fd 1 unchanged, with backpressure: Bun's terminal `data` callback cannot
 * be paused, so when fd 1 is full the terminal's own output is suspended with tcflow(TCOOFF)
 * on the slave side, and restarted once the sink has drained. Memory stays bounded and the
 * event loop stays free for signals.
 */
export class PtyOutput {
  readonly #sink = Bun.file(STDOUT_FD).writer({ highWaterMark: 64 * 1024 });
  #slave = -1;
  #suspended = false;
  #drained: Promise<unknown> = Promise.resolve();
  #masterClosed: () => void = () => {};
  /** Resolves when the PTY reported EOF/EIO on the master: every byte has been read. */
  readonly masterClosed = new Promise<void>((resolve) => (this.#masterClosed = resolve));

  /** Opens the slave by the workload's fd 0 so output can be suspended (Linux; elsewhere none). */
  attach(pid: number): void {
    try {
      this.#slave = openSync(`/proc/${pid}/fd/0`, constants.O_RDWR | constants.O_NOCTTY);
    } catch {
      this.#slave = -1;
    }
  }

  /** The terminal `data` callback. */
  write(chunk: Uint8Array): void {
    this.#sink.write(chunk);
    const flushed = this.#sink.flush();
    if (flushed instanceof Promise) this.#suspend(flushed);
  }

  /** The terminal `exit` callback. */
  onMasterClosed(): void {
    this.#masterClosed();
  }

  /** Waits up to `ms` for the master to close; returns whether it did. */
  async waitMasterClosed(ms: number): Promise<boolean> {
    let timer: Timer | undefined;
    const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    const closed = await Promise.race([this.masterClosed.then(() => true), timeout]);
    clearTimeout(timer);
    return closed;
  }

  /** Drops our hold on the slave: while we hold it the master never reports EOF. */
  releaseSlave(): void {
    if (this.#slave < 0) return;
    if (this.#suspended) this.#resume();
    closeSync(this.#slave);
    this.#slave = -1;
  }

  /** Writes out everything received, then closes fd 1 (the daemon's stdout EOF). */
  async finish(): Promise<void> {
    await this.#drained;
    await this.#sink.end();
  }

  #suspend(flushed: Promise<unknown>): void {
    this.#drained = flushed;
    if (this.#suspended || this.#slave < 0) return;
    this.#suspended = true;
    setTerminalOutput(this.#slave, false);
    void flushed.then(() => this.#resume());
  }

  #resume(): void {
    if (!this.#suspended) return;
    this.#suspended = false;
    if (this.#slave >= 0) setTerminalOutput(this.#slave, true);
    const flushed = this.#sink.flush();
    if (flushed instanceof Promise) this.#suspend(flushed);
  }
}
