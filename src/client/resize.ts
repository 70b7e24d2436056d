/**
 * PTY resizes as the daemon sends them: one `resize` frame in flight at a time, acknowledged by
 * its `resized` event within the daemon's deadline (counted from `started`), else a protocol
 * failure and the wrapper is killed. Input is held while a resize awaits its ack.
 */
import { ResizeControl, encodeFrame } from "../protocol/index.ts";
import type { ExecClient } from "./exec-client.ts";

/** The daemon's deadline for a resize acknowledgement. */
const RESIZE_ACK_MS = 1000;

export /** One resize in flight at a time, acknowledged within the daemon's deadline; input waits. */
class ResizeQueue {
  #nextId = 1;
  #inFlight: { id: number; timer: ReturnType<typeof setTimeout> | null } | null = null;
  #wanted: { rows: number; cols: number } | null = null;
  #last: { rows: number; cols: number };
  #held: Buffer[] = [];
  #release: (chunks: Buffer[]) => void = () => {};
  #idle: (() => void)[] = [];
  #stopped = false;

  constructor(
    readonly client: ExecClient,
    initial: { rows: number; cols: number },
  ) {
    this.#last = initial;
    client.onEvent((event) => {
      if (event.type === "started" && this.#inFlight) this.#arm(this.#inFlight);
      if (event.type === "resized") this.#acknowledged(event.id);
      if (event.type === "eof" || event.type === "exit" || event.type === "error") this.#drop();
    });
  }

  get waiting(): boolean {
    return this.#inFlight !== null;
  }

  hold(chunk: Buffer): void {
    this.#held.push(chunk);
  }

  onRelease(release: (chunks: Buffer[]) => void): void {
    this.#release = release;
  }

  /** Runs `fn` once no resize is in flight. */
  whenIdle(fn: () => void): void {
    if (this.#inFlight) this.#idle.push(fn);
    else fn();
  }

  request(size: { rows: number; cols: number }): void {
    if (this.#stopped) return;
    this.#wanted = size;
    this.#next();
  }

  stop(): void {
    this.#stopped = true;
    this.#drop();
  }

  #next(): void {
    const size = this.#wanted;
    if (this.#inFlight || !size || this.#stopped || this.client.sequence.eof) return;
    this.#wanted = null;
    if (size.rows === this.#last.rows && size.cols === this.#last.cols) return;
    this.#last = size;
    const inFlight = { id: this.#nextId++, timer: null };
    this.#inFlight = inFlight;
    this.client.control(encodeFrame(ResizeControl, { type: "resize", protocolVersion: 1, id: inFlight.id, ...size }, "resize control"));
    if (this.client.sequence.started) this.#arm(inFlight);
  }

  /** The deadline runs from `started`: a wrapper acknowledges nothing before it. */
  #arm(inFlight: { id: number; timer: ReturnType<typeof setTimeout> | null }): void {
    inFlight.timer ??= setTimeout(() => {
      if (this.#inFlight !== inFlight || this.client.sequence.eof) return;
      this.client.fail(`resize ${inFlight.id} was not acknowledged within ${RESIZE_ACK_MS} ms`);
      this.client.child.kill("SIGKILL");
    }, RESIZE_ACK_MS);
  }

  #acknowledged(id: number): void {
    if (this.#inFlight?.id !== id) {
      this.client.fail(`resized ${id} acknowledges no pending resize`);
      return;
    }
    this.#settle();
    this.#next();
  }

  /** After eof no ack comes: stop waiting and let held input through. */
  #drop(): void {
    this.#wanted = null;
    this.#settle();
  }

  #settle(): void {
    if (this.#inFlight?.timer) clearTimeout(this.#inFlight.timer);
    this.#inFlight = null;
    const held = this.#held.splice(0);
    if (held.length) this.#release(held);
    for (const fn of this.#idle.splice(0)) fn();
  }
}
