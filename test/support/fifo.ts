/** The daemon's end of a wrapper's fd 1 as a FIFO, for tests of a daemon that stops reading. */
import { closeSync, constants, openSync, readSync, unlinkSync } from "node:fs";
import { join } from "node:path";

/**
 * The daemon's end of fd 1 as a FIFO the test reads when it wants: not reading it is a real
 * stall in the kernel, whatever the test runtime's stream layer does. Counts bytes (and bytes
 * other than NUL) instead of keeping them.
 */
export class StdoutFifo {
  readonly writeFd: number;
  readonly #readFd: number;
  readonly #buffer = Buffer.allocUnsafe(1 << 20);
  bytes = 0;
  nonZero = 0;
  #eof = false;

  constructor(dir: string) {
    const path = join(dir, `stdout-${process.pid}-${Math.random().toString(16).slice(2)}`);
    const made = Bun.spawnSync(["mkfifo", path]);
    if (made.exitCode !== 0) throw new Error(`mkfifo failed: ${made.stderr.toString()}`);
    this.#readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    this.writeFd = openSync(path, constants.O_WRONLY);
    unlinkSync(path);
  }

  /** After spawning: only the wrapper may hold the write end, so its close is our EOF. */
  handedOver(): void {
    closeSync(this.writeFd);
  }

  /** Reads what is there now; returns false once every writer has closed. */
  readAvailable(): boolean {
    for (;;) {
      let n: number;
      try {
        n = readSync(this.#readFd, this.#buffer, 0, this.#buffer.length, null);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EAGAIN") return true;
        throw error;
      }
      if (n === 0) {
        this.#eof = true;
        return false;
      }
      this.bytes += n;
      for (let i = 0; i < n; i++) if (this.#buffer[i] !== 0) this.nonZero++;
    }
  }

  /** Reads until EOF. */
  async drain(): Promise<void> {
    while (!this.#eof && this.readAvailable()) await Bun.sleep(1);
    closeSync(this.#readFd);
  }
}
