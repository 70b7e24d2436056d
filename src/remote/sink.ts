/**
 * Ordered, asynchronous writes to one descriptor. A write that blocks (a daemon not reading)
 * blocks a worker thread, never the event loop, so signals, controls and the other channels
 * keep flowing while that descriptor waits.
 */
import { write as fsWrite } from "node:fs";
import { hasErrno, WOULD_BLOCK } from "../platform/errno.ts";

/** The most bytes of queued writes joined into one. */
const COALESCE = 256 * 1024;

export class FdSink {
  #queue: { bytes: Uint8Array; done: (error: Error | null) => void }[] = [];
  #writing = false;
  #idle: (() => void)[] = [];
  /** Set when the descriptor failed (EPIPE: the reader went away); later writes are dropped. */
  lost: Error | null = null;

  constructor(readonly fd: number) {}

  /** Queues `bytes`; resolves once all of them are written (or dropped after a failure). */
  write(bytes: Uint8Array): Promise<void> {
    return new Promise((resolve) => {
      this.#queue.push({ bytes, done: () => resolve() });
      this.#pump();
    });
  }

  /** Writes waiting or in progress. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Resolves when nothing is waiting. */
  drained(): Promise<void> {
    if (this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #pump(): void {
    if (this.#writing) return;
    const next = this.#queue[0];
    if (!next) {
      for (const resolve of this.#idle.splice(0)) resolve();
      return;
    }
    if (this.lost) {
      this.#queue.shift();
      next.done(this.lost);
      this.#pump();
      return;
    }
    // Everything queued goes out in one write (up to COALESCE bytes): one syscall, not one per frame.
    let count = 1;
    let size = next.bytes.length;
    while (count < this.#queue.length && size + this.#queue[count]!.bytes.length <= COALESCE) size += this.#queue[count++]!.bytes.length;
    const batch = this.#queue.slice(0, count);
    const bytes = count === 1 ? next.bytes : Buffer.concat(batch.map((entry) => entry.bytes), size);
    this.#writing = true;
    this.#writeFrom(bytes, 0, (error) => {
      this.#writing = false;
      if (error) this.lost = error;
      this.#queue.splice(0, count);
      for (const entry of batch) entry.done(error);
      this.#pump();
    });
  }

  #writeFrom(bytes: Uint8Array, offset: number, done: (error: Error | null) => void): void {
    if (offset >= bytes.length) return done(null);
    fsWrite(this.fd, bytes, offset, bytes.length - offset, null, (error, written) => {
      if (error) {
        // A non-blocking descriptor shared with someone else: wait a moment, try again.
        if (hasErrno(error, WOULD_BLOCK)) return void setTimeout(() => this.#writeFrom(bytes, offset, done), 1);
        return done(error);
      }
      this.#writeFrom(bytes, offset + written, done);
    });
  }
}
