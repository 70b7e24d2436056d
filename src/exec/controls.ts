import { describeDescriptor, type DescriptorKind } from "../platform/descriptor.ts";
import { unlessPeerGone } from "../platform/errno.ts";
import { UsageError, type Invocation } from "../argv.ts";
import { SignalForwarder } from "./signals.ts";
import { CONTROL_FD, Control, EVENT_FD, FrameDecoder, LimitError, MAX_FRAME_BYTES, ProtocolError, type SpawnEnvelope } from "../protocol/index.ts";
import { refuseUnreadEnvelope } from "./events.ts";


/** What fd 3 may be (`3< envelope.json` is a file), and fd 4 (`4>&1` on a terminal is a character device). */
const CONTROL_KINDS: readonly DescriptorKind[] = ["pipe", "socket", "file"];
const EVENT_KINDS: readonly DescriptorKind[] = ["pipe", "socket", "file", "character device"];

/**
 * Why this `exec` was not started the daemon's way (five stdio descriptors), or null. Run by
 * hand with only three, fds 3 and 4 are Bun's own descriptors, which must never be read.
 * The caller makes it a usage error.
 */
export function protocolFdsProblem(): string | null {
  for (const [fd, kinds] of [[CONTROL_FD, CONTROL_KINDS], [EVENT_FD, EVENT_KINDS]] as const) {
    const found = describeDescriptor(fd);
    if (!kinds.includes(found.kind)) {
      return `exec needs the spawn envelope on fd ${CONTROL_FD} and an event channel on fd ${EVENT_FD}; to run a command by hand use \`paseo-host-runtime run\` (fd ${fd} is ${found.what})`;
    }
  }
  return null;
}

/**
 * The first steps of every `exec` wrapper (local, or the local half of a remote one): the
 * signal handlers before anything else (a SIGTERM landing before its handler would kill the
 * wrapper and leave nothing to forward it), `/` as cwd, then fd 3 and 4 must be the daemon's.
 */
export function startWrapper(): SignalForwarder {
  const signals = new SignalForwarder().install();
  process.chdir("/");
  const notTheDaemons = protocolFdsProblem();
  if (notTheDaemons !== null) throw new UsageError(notTheDaemons, "exec");
  return signals;
}

/**
 * The spawn envelope, the first frame of fd 3: how every `exec` (local, or the local half of a
 * remote one) reads it. One too large (LimitError) is answered on fd 4 at once, then thrown.
 */
export async function readSpawnEnvelope(controls: ControlReader, invocation: Invocation): Promise<SpawnEnvelope> {
  const first = await controls.next().catch((error: unknown) => {
    if (error instanceof LimitError) refuseUnreadEnvelope(invocation, error);
    throw error;
  });
  if (!first) throw new ProtocolError("fd 3 reached EOF before the spawn envelope");
  if (first.type !== "spawn") throw new ProtocolError(`the first fd 3 frame must be a spawn envelope, got ${first.type}`);
  return first;
}

/**
 * Reads fd 3 as a sequence of Control frames. Frames are decoded line by line so a bad
 * frame is reported only after every good frame before it.
 */
export class ControlReader {
  readonly #decoder = new FrameDecoder(Control, "fd 3 control", MAX_FRAME_BYTES, "fd 3");
  readonly #reader: { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> };
  #chunk: Uint8Array = new Uint8Array(0);
  #done = false;

  constructor(fd = CONTROL_FD) {
    this.#reader = Bun.file(fd).stream().getReader();
  }

  /** The next frame, or null at EOF. Throws ProtocolError on a bad frame or a partial one at EOF. */
  async next(): Promise<Control | null> {
    for (;;) {
      const frame = this.#take();
      if (frame) return frame;
      if (this.#done) return null;
      const { done, value } = await this.#reader.read().catch((error: Error) => {
        throw new ProtocolError(`cannot read fd 3: ${error.message}`);
      });
      if (done || !value) {
        this.#done = true;
        this.#decoder.end();
        return null;
      }
      this.#chunk = value;
    }
  }

  /** Every complete frame already received, without waiting for more. Throws on a bad one. */
  takeBuffered(): Control[] {
    const frames: Control[] = [];
    for (let frame = this.#take(); frame; frame = this.#take()) frames.push(frame);
    return frames;
  }

  /** Bytes already received beyond the frames taken so far (part of a frame included). */
  get bufferedBytes(): number {
    return this.#chunk.length + this.#decoder.pendingBytes;
  }

  #take(): Control | null {
    while (this.#chunk.length > 0) {
      const nl = this.#chunk.indexOf(0x0a);
      const end = nl === -1 ? this.#chunk.length : nl + 1;
      const part = this.#chunk.subarray(0, end);
      this.#chunk = this.#chunk.subarray(end);
      const [frame] = this.#decoder.push(part);
      if (frame) return frame;
    }
    return null;
  }

  /**
   * The bytes after the frames taken so far, chunk by chunk as they come, until EOF (null): for
   * a caller that passes fd 3 on undecoded after the envelope (a frame boundary: nothing is
   * held by the decoder then). A read error is the daemon's end going away (PEER_GONE): EOF.
   */
  async nextBytes(): Promise<Uint8Array | null> {
    if (this.#chunk.length > 0) {
      const rest = this.#chunk;
      this.#chunk = new Uint8Array(0);
      return rest;
    }
    if (this.#done) return null;
    const { done, value } = await this.#reader.read().catch((error: unknown) => {
      unlessPeerGone(error);
      return { done: true, value: undefined };
    });
    if (done || !value) {
      this.#done = true;
      return null;
    }
    return value;
  }

  /**
   * Reads and discards everything until the daemon closes fd 3. A socket closed with unread
   * bytes resets the daemon's end (ECONNRESET), so a wrapper done with controls still drains.
   */
  async drain(): Promise<void> {
    this.#chunk = new Uint8Array(0);
    while (!this.#done) {
      // A read error is the daemon's end going away (PEER_GONE): nothing is left to drain.
      const { done } = await this.#reader.read().catch((error: unknown) => {
        unlessPeerGone(error);
        return { done: true };
      });
      if (done) this.#done = true;
    }
  }

  /** Stops reading (the stream is released; the daemon may still write). */
  cancel(): void {
    this.#done = true;
    this.#reader.cancel().catch(() => {
      // The stream already failed or ended: it is released either way.
    });
  }
}
