/**
 * One connection of the proxy (or the test forwarder) on Bun's own sockets, with the few
 * stream verbs the proxy needs: one reader at a time, pause/resume, a write that holds what the
 * kernel did not take, half-close, and one close report. Not node:net: loading it cost the
 * exec wrapper ~11 ms per execution under an allowlist; Bun.listen costs 0.1 ms.
 *
 * Bounded by construction: Bun's `write` takes what the kernel takes and returns the count,
 * the rest is held here and `write` says false until `drain`; a paused or readerless
 * connection stops reading from the kernel, keeping only what Bun had already read.
 */
import type { Socket, SocketHandler, TCPSocketListener, UnixSocketListener } from "bun";

export interface Reader {
  data(chunk: Buffer): void;
  /** The peer's end, after every chunk before it. */
  end(): void;
}

export class Conn {
  #socket: Socket<Conn> | null = null;
  #reader: Reader | null = null;
  #paused = false;
  /** Chunks read while paused or readerless, delivered in order on resume. */
  #inbox: Buffer[] = [];
  #held: Buffer | null = null;
  #drain: (() => void)[] = [];
  #endAfterWrite = false;
  #endSent = false;
  #peerEnded = false;
  #endDelivered = false;
  #socketClosed = false;
  #destroyed = false;
  #reported = false;
  #error: Error | undefined;
  #onClose: ((clean: boolean, error: Error | undefined) => void)[] = [];

  attach(socket: Socket<Conn>): void {
    this.#socket = socket;
    socket.data = this;
    if (this.#paused || !this.#reader) socket.pause();
    if (this.#held || this.#endAfterWrite) this.#flush();
  }

  /** Destroyed, or the connection is gone. */
  get closed(): boolean {
    return this.#destroyed || this.#socketClosed;
  }

  /** Sets (or, with null, removes) the one reader; what arrived meanwhile goes to it first. */
  read(reader: Reader | null): void {
    this.#reader = reader;
    this.#deliver();
  }

  pause(): void {
    this.#paused = true;
    this.#socket?.pause();
  }

  resume(): void {
    this.#paused = false;
    this.#deliver();
  }

  /** Bytes held for the peer, not yet taken by the kernel. */
  get queued(): number {
    return this.#held?.length ?? 0;
  }

  /**
   * False when some bytes are held: wait for `onDrain` before writing more. Bytes for a peer
   * that is gone go nowhere (true): its close already told the other side.
   */
  write(bytes: Uint8Array | string): boolean {
    if (this.closed || this.#endAfterWrite) return true;
    const chunk = typeof bytes === "string" ? Buffer.from(bytes, "latin1") : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (this.#held || !this.#socket) {
      this.#held = this.#held ? Buffer.concat([this.#held, chunk]) : chunk;
      return false;
    }
    const written = this.#socket.write(chunk);
    if (written < 0) return true;
    if (written < chunk.length) this.#held = chunk.subarray(written);
    return this.#held === null;
  }

  onDrain(callback: () => void): void {
    this.#drain.push(callback);
  }

  /** Writes `bytes` (if any), then sends our end once everything held was taken. */
  end(bytes?: Uint8Array | string): void {
    if (bytes !== undefined) this.write(bytes);
    this.#endAfterWrite = true;
    this.#flush();
  }

  /** Closes at once; what is held or unread is dropped. */
  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.#inbox = [];
    if (this.#socket && !this.#socketClosed) this.#socket.terminate();
    else this.#report();
  }

  /**
   * `callback` runs once the connection is gone and every chunk read was delivered; `clean`
   * when it ended without an error, a destroy or bytes it never took.
   */
  onClose(callback: (clean: boolean, error: Error | undefined) => void): void {
    this.#onClose.push(callback);
  }

  #deliver(): void {
    while (this.#reader && !this.#paused && this.#inbox.length > 0) this.#reader.data(this.#inbox.shift()!);
    if (!this.#reader || this.#paused || this.#destroyed) return;
    if (this.#peerEnded && !this.#endDelivered) {
      this.#endDelivered = true;
      this.#reader.end();
    }
    if (this.#socketClosed) this.#report();
    else if (!this.#destroyed) this.#socket?.resume();
  }

  #flush(): void {
    const socket = this.#socket;
    if (!socket || this.closed) return;
    if (this.#held) {
      const written = socket.write(this.#held);
      if (written < 0) return;
      this.#held = written < this.#held.length ? this.#held.subarray(written) : null;
      if (this.#held) return;
    }
    if (this.#endAfterWrite && !this.#endSent) {
      this.#endSent = true;
      socket.shutdown();
    }
    for (const callback of this.#drain.splice(0)) callback();
  }

  /** The close report, once what was read is delivered (a readerless or destroyed connection has nothing to wait for). */
  #report(): void {
    const waiting = this.#inbox.length > 0 || (this.#peerEnded && !this.#endDelivered);
    if (this.#reported || (waiting && this.#reader && !this.#destroyed)) return;
    this.#reported = true;
    const clean = !this.#destroyed && this.#error === undefined && this.#held === null;
    for (const callback of this.#onClose.splice(0)) callback(clean, this.#error);
  }

  /** Bun's handlers for sockets whose `data` is a Conn. */
  static readonly handlers: SocketHandler<Conn> = {
    open: (socket) => socket.data.attach(socket),
    data: (socket, bytes) => {
      const conn = socket.data;
      if (conn.#destroyed) return;
      conn.#inbox.push(bytes);
      if (conn.#reader && !conn.#paused) conn.#deliver();
      else socket.pause();
    },
    drain: (socket) => socket.data.#flush(),
    end: (socket) => {
      socket.data.#peerEnded = true;
      socket.data.#deliver();
    },
    close: (socket, error) => {
      const conn = socket.data;
      conn.#error ??= error;
      // Bun may report a peer's clean end as the close itself: an end, unless it failed or we destroyed it.
      if (!conn.#error && !conn.#destroyed) conn.#peerEnded = true;
      conn.#socketClosed = true;
      conn.#deliver();
      conn.#report();
    },
    error: (socket, error) => {
      socket.data.#error ??= error;
    },
    connectError: (socket, error) => {
      socket.data.#error ??= error;
    },
  };
}

export type ConnListener = UnixSocketListener<Conn> | TCPSocketListener<Conn>;

/** Listens on a Unix socket or a TCP address; `accept` gets each connection, readerless (so paused). */
export function listenConns(where: { unix: string }, accept: (conn: Conn) => void): UnixSocketListener<Conn>;
export function listenConns(where: { hostname: string; port: number }, accept: (conn: Conn) => void): TCPSocketListener<Conn>;
export function listenConns(where: { unix: string } | { hostname: string; port: number }, accept: (conn: Conn) => void): ConnListener {
  const socket: SocketHandler<Conn> = {
    ...Conn.handlers,
    open: (bunSocket) => {
      const conn = new Conn();
      conn.attach(bunSocket);
      accept(conn);
    },
  };
  return Bun.listen<Conn>({ ...where, allowHalfOpen: true, socket } as never);
}

/** Connects; rejects with the failure (its `code` the errno: ECONNREFUSED…). */
export async function connectConn(where: { unix: string } | { hostname: string; port: number }): Promise<Conn> {
  const conn = new Conn();
  await Bun.connect<Conn>({ ...where, allowHalfOpen: true, data: conn, socket: Conn.handlers } as never);
  return conn;
}
