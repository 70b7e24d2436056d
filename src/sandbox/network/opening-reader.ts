/**
 * The opening bytes of a client connection (an HTTP head, a SOCKS5 handshake), read with a
 * bound: at most `limit` bytes are ever held, so a client that never finishes its head costs
 * no more than that. Once the opening is read, `release()` hands over what came after it and
 * leaves the connection paused for the pipe.
 */
import type { Conn } from "./conn.ts";

/** The peer closed (or the socket failed) before the bytes the opening needs arrived. */
export class ClosedEarly extends Error {}

/** The opening grew past the limit without being complete. */
export class TooLarge extends Error {}

export class OpeningReader {
  #buffer: Buffer = Buffer.alloc(0);
  #wake: (() => void) | null = null;
  #ended = false;
  #released = false;
  readonly #onData = (chunk: Buffer) => {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    // Hold no more than the limit: stop reading until the waiter decides.
    if (this.#buffer.length > this.limit) this.conn.pause();
    this.#notify();
  };
  readonly #onEnd = () => {
    if (this.#released) return;
    this.#ended = true;
    this.#notify();
  };

  constructor(
    readonly conn: Conn,
    readonly limit: number,
  ) {
    conn.read({ data: this.#onData, end: this.#onEnd });
    conn.onClose(this.#onEnd);
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  async #more(): Promise<void> {
    if (this.#buffer.length > this.limit) throw new TooLarge();
    if (this.#ended) throw new ClosedEarly();
    await new Promise<void>((resolve) => (this.#wake = resolve));
  }

  /** The next `count` bytes. */
  async bytes(count: number): Promise<Buffer> {
    while (this.#buffer.length < count) await this.#more();
    const taken = this.#buffer.subarray(0, count);
    this.#buffer = this.#buffer.subarray(count);
    return taken;
  }

  /** The next byte, left in place. */
  async peek(): Promise<number> {
    while (this.#buffer.length < 1) await this.#more();
    return this.#buffer[0]!;
  }

  /** An HTTP head: everything up to and including the first empty line (CRLF CRLF). */
  async head(): Promise<Buffer> {
    let from = 0;
    for (;;) {
      const end = this.#buffer.indexOf("\r\n\r\n", from);
      if (end >= 0 && end + 4 <= this.limit) return this.bytes(end + 4);
      if (end >= 0 || this.#buffer.length >= this.limit) throw new TooLarge();
      from = Math.max(0, this.#buffer.length - 3);
      await this.#more();
    }
  }

  /** Whether the peer already sent its end (a client may half-close right after its request). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Stops reading: the connection is paused and readerless; returns the bytes read past the opening. */
  release(): Buffer {
    this.#released = true;
    this.conn.pause();
    this.conn.read(null);
    return this.#buffer;
  }
}
