/**
 * The multiplex a remote exec runs over one ssh session (local `exec` wrapper ⇄ remote
 * `exec-remote`). Each frame is a 6-byte header, then its payload:
 *
 *   u8 type | u8 channel | u32 big-endian payload length | payload
 *
 * Channels are the daemon's descriptors: 0 stdin, 1 stdout, 2 stderr, 3 controls, 4 events.
 * Flow control (channels 0, 1 and 2): a sender may have at most MUX_WINDOW bytes of DATA
 * unacknowledged per channel; the receiver returns CREDIT once it has written those bytes to
 * their destination. So a daemon that stops reading fd 1 stops the credit, the remote side
 * stops reading the workload's stdout, and the workload blocks on its own write: neither side
 * ever holds more than one window per channel. Controls (3) and events (4) are small and
 * bounded by the protocol itself; they are not credited.
 */
import { ProtocolError } from "../protocol/index.ts";

export const MuxType = {
  /** remote → local, first frame: JSON Hello. */
  HELLO: 1,
  /** local → remote, first frame: the spawn envelope line for the remote `exec`. */
  OPEN: 2,
  /** Bytes of one channel. */
  DATA: 3,
  /** A channel's end of stream. */
  EOF: 4,
  /** Payload u32: this many more bytes of the channel may be sent. */
  CREDIT: 5,
  /** local → remote: a signal name for the remote wrapper (as the daemon would send it). */
  SIGNAL: 6,
  /** remote → local, last frame: JSON WrapperExit of the remote `exec`. */
  EXIT: 7,
  /** remote → local: the remote side failed itself (UTF-8 message); nothing more follows. */
  ERROR: 8,
  /** remote → local, empty: the remote side is alive and working (sent every `--keepalive-ms`). */
  PING: 9,
} as const;

export type MuxType = (typeof MuxType)[keyof typeof MuxType];

export const Channel = { STDIN: 0, STDOUT: 1, STDERR: 2, CONTROLS: 3, EVENTS: 4 } as const;

/** Credit each side starts with on every credited channel. */
export const MUX_WINDOW = 1024 * 1024;
/** Largest DATA payload; bigger chunks are split. */
export const MAX_DATA = 64 * 1024;
/** Largest payload of any frame (an OPEN carries an envelope of up to 1 MiB plus its newline). */
const MAX_PAYLOAD = 1024 * 1024 + 1;

const HEADER = 6;
const NAMES = Object.fromEntries(Object.entries(MuxType).map(([name, type]) => [type, name])) as Record<number, string>;

/** One decoded frame. */
export interface MuxFrame {
  type: MuxType;
  channel: number;
  payload: Uint8Array;
}

/** The bytes of one frame. */
export function encodeMux(type: MuxType, channel: number, payload: Uint8Array | string = new Uint8Array(0)): Uint8Array {
  const body = typeof payload === "string" ? new TextEncoder().encode(payload) : payload;
  if (body.length > MAX_PAYLOAD) throw new Error(`mux ${NAMES[type]} payload of ${body.length} bytes is larger than ${MAX_PAYLOAD}`);
  const frame = new Uint8Array(HEADER + body.length);
  frame[0] = type;
  frame[1] = channel;
  new DataView(frame.buffer).setUint32(2, body.length);
  frame.set(body, HEADER);
  return frame;
}

/** A CREDIT frame returning `bytes` on `channel`. */
export function encodeCredit(channel: number, bytes: number): Uint8Array {
  const payload = new Uint8Array(4);
  new DataView(payload.buffer).setUint32(0, bytes);
  return encodeMux(MuxType.CREDIT, channel, payload);
}

/** The amount of a CREDIT frame. */
export function creditOf(frame: MuxFrame): number {
  if (frame.payload.length !== 4) throw new ProtocolError(`mux CREDIT frame with a ${frame.payload.length}-byte payload`);
  return new DataView(frame.payload.buffer, frame.payload.byteOffset, 4).getUint32(0);
}

/** Which (type, channel) pairs each direction may send. */
const ALLOWED = {
  toRemote: new Map<number, readonly number[]>([
    [MuxType.OPEN, [0]],
    [MuxType.DATA, [Channel.STDIN, Channel.CONTROLS]],
    [MuxType.EOF, [Channel.STDIN, Channel.CONTROLS]],
    [MuxType.CREDIT, [Channel.STDOUT, Channel.STDERR]],
    [MuxType.SIGNAL, [0]],
  ]),
  toLocal: new Map<number, readonly number[]>([
    [MuxType.HELLO, [0]],
    [MuxType.DATA, [Channel.STDOUT, Channel.STDERR, Channel.EVENTS]],
    [MuxType.EOF, [Channel.STDOUT, Channel.STDERR, Channel.EVENTS]],
    [MuxType.CREDIT, [Channel.STDIN]],
    [MuxType.EXIT, [0]],
    [MuxType.ERROR, [0]],
    [MuxType.PING, [0]],
  ]),
};

/** A broken multiplex: `before` holds the good frames of the same chunk, to be handled first. */
export class MuxError extends ProtocolError {
  override name = "MuxError";
  constructor(
    message: string,
    readonly before: MuxFrame[],
  ) {
    super(message);
  }
}

/**
 * Splits a byte stream into frames, in any chunking. Anything a peer of this direction may
 * not send (unknown type, wrong channel, oversized payload) is a MuxError, and final; the
 * frames of the same chunk before it come with it (a greeting followed by garbage is still a
 * greeting).
 */
export class MuxDecoder {
  #buffer: Uint8Array = new Uint8Array(0);
  #failure: ProtocolError | null = null;
  readonly #allowed: Map<number, readonly number[]>;

  constructor(direction: "toRemote" | "toLocal") {
    this.#allowed = ALLOWED[direction];
  }

  /** Feeds one chunk; returns every frame it completed, in order. */
  push(chunk: Uint8Array): MuxFrame[] {
    if (this.#failure) throw this.#failure;
    let data = chunk;
    if (this.#buffer.length > 0) {
      data = new Uint8Array(this.#buffer.length + chunk.length);
      data.set(this.#buffer);
      data.set(chunk, this.#buffer.length);
    }
    const frames: MuxFrame[] = [];
    let at = 0;
    try {
      while (data.length - at >= HEADER) {
        const type = data[at]!;
        const channel = data[at + 1]!;
        const length = new DataView(data.buffer, data.byteOffset + at + 2, 4).getUint32(0);
        this.#check(type, channel, length);
        if (data.length - at < HEADER + length) break;
        // A copy: the caller keeps payloads while the stream's buffers are reused.
        frames.push({ type: type as MuxType, channel, payload: data.slice(at + HEADER, at + HEADER + length) });
        at += HEADER + length;
      }
    } catch (error) {
      this.#failure = error as ProtocolError;
      throw new MuxError(this.#failure.message, frames);
    }
    this.#buffer = at === data.length ? new Uint8Array(0) : data.slice(at);
    return frames;
  }

  /** Bytes held for an incomplete frame (at EOF these mean the stream was cut). */
  get pendingBytes(): number {
    return this.#buffer.length;
  }

  #check(type: number, channel: number, length: number): void {
    const channels = this.#allowed.get(type);
    if (!channels) throw new ProtocolError(`mux frame of type ${type} (${NAMES[type] ?? "unknown"}) is not allowed in this direction`);
    if (!channels.includes(channel)) throw new ProtocolError(`mux ${NAMES[type]} frame on channel ${channel} is not allowed in this direction`);
    const max = type === MuxType.DATA ? MAX_DATA : MAX_PAYLOAD;
    if (length > max) throw new ProtocolError(`mux ${NAMES[type]} frame of ${length} bytes is larger than ${max}`);
  }
}

/**
 * The sending side of one credited channel: how many bytes may still go out. A peer that
 * returns more than it was sent is broken (ProtocolError).
 */
export class SendCredit {
  #available = MUX_WINDOW;
  #outstanding = 0;
  #waiter: (() => void) | null = null;

  get available(): number {
    return this.#available;
  }

  /** Takes up to `wanted` bytes of credit (at most MAX_DATA); 0 when none is left. */
  take(wanted: number): number {
    const n = Math.min(wanted, this.#available, MAX_DATA);
    this.#available -= n;
    this.#outstanding += n;
    return n;
  }

  /** The peer wrote `bytes` more. */
  grant(bytes: number): void {
    if (bytes > this.#outstanding) throw new ProtocolError(`mux credit of ${bytes} bytes exceeds the ${this.#outstanding} outstanding`);
    this.#outstanding -= bytes;
    this.#available += bytes;
    const waiter = this.#waiter;
    this.#waiter = null;
    waiter?.();
  }

  /** Resolves once some credit is available. */
  async wait(): Promise<void> {
    while (this.#available === 0) await new Promise<void>((resolve) => (this.#waiter = resolve));
  }
}

/** The receiving side of one credited channel: a sender that overruns its window is broken. */
export class ReceiveWindow {
  #inFlight = 0;

  /** `bytes` arrived (not yet written). */
  arrived(bytes: number, what: string): void {
    this.#inFlight += bytes;
    if (this.#inFlight > MUX_WINDOW) throw new ProtocolError(`${what}: the peer sent ${this.#inFlight} bytes, more than its ${MUX_WINDOW}-byte window`);
  }

  /** `bytes` were written to their destination and are credited back. */
  written(bytes: number): void {
    this.#inFlight -= bytes;
  }
}
