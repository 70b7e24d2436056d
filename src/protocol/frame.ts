import { LimitError, ProtocolError, parseMessage, parseStrict, prefixed, type MessageInput, type MessageOutput, type MessageSchema } from "./errors.ts";
import { strictUtf8, utf8OrNull } from "./utf8.ts";

/** Largest frame the decoder accepts, newline excluded. Envelopes carry env maps, so be generous. */
export const MAX_FRAME_BYTES = 1024 * 1024;

const NEWLINE = 0x0a;

/**
 * Canonical bytes of one frame: validated, keys in schema order, absent optionals dropped,
 * exactly one trailing newline.
 */
export function encodeFrame<S extends MessageSchema>(schema: S, value: MessageInput<S>, what: string): string {
  return `${JSON.stringify(parseStrict(schema, value, what))}\n`;
}

/** A size as a diagnostic says it: `1 MiB`, or bytes when it is not a whole number of MiB. */
export function sizeText(bytes: number): string {
  return bytes >= MIB && bytes % MIB === 0 ? `${bytes / MIB} MiB` : `${bytes} bytes`;
}

const MIB = 1024 * 1024;

/**
 * Splits a byte stream into newline-terminated frames and validates each one.
 * Chunks may cut anywhere, even inside a multi-byte UTF-8 character. The first error is
 * final: every later `push` or `end` throws it again, because the stream is broken.
 * `stream` names the descriptor in the size refusal (`fd 3 frame larger than 1 MiB`).
 */
export class FrameDecoder<S extends MessageSchema> {
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #frames = 0;
  #failure: Error | null = null;
  readonly #utf8 = strictUtf8();

  constructor(
    readonly schema: S,
    readonly what: string,
    readonly maxFrameBytes = MAX_FRAME_BYTES,
    readonly stream = what,
  ) {}

  /** Feeds one chunk; returns every frame it completed, in order. Throws on the first bad one. */
  push(chunk: Uint8Array): MessageOutput<S>[] {
    return this.#guard(() => this.#push(chunk));
  }

  /** Call at EOF: throws when bytes are left without their newline. */
  end(): void {
    this.#guard(() => {
      if (this.#pendingBytes > 0) {
        throw new ProtocolError(`${this.what} frame ${this.#frames + 1}: ${this.#pendingBytes} bytes without a final newline at EOF`);
      }
    });
  }

  /** Bytes held for an incomplete frame. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  #guard<T>(step: () => T): T {
    if (this.#failure) throw this.#failure;
    try {
      return step();
    } catch (error) {
      this.#failure = error instanceof Error ? error : new ProtocolError(String(error));
      this.#pending = [];
      this.#pendingBytes = 0;
      throw this.#failure;
    }
  }

  #push(chunk: Uint8Array): MessageOutput<S>[] {
    const frames: MessageOutput<S>[] = [];
    let start = 0;
    let nl = chunk.indexOf(NEWLINE);
    if (nl !== -1 && this.#pendingBytes > 0) {
      frames.push(this.#finish(chunk.subarray(0, nl)));
      start = nl + 1;
      nl = chunk.indexOf(NEWLINE, start);
    }
    if (nl !== -1 && chunk.indexOf(NEWLINE, nl + 1) !== -1) {
      // Two or more complete frames left: decode them as one text, not one TextDecoder call per
      // frame. A newline byte never occurs inside a multi-byte UTF-8 character, so the text has
      // its "\n" exactly where the bytes do. Invalid UTF-8 anywhere in the span falls back to
      // frame-by-frame decoding below, which names the exact frame as before.
      const text = this.#decodeSpan(chunk.subarray(start, chunk.lastIndexOf(NEWLINE)));
      for (let at = 0; text !== null && nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
        const end = text.indexOf("\n", at);
        frames.push(this.#parse(nl - start, end === -1 ? text.slice(at) : text.slice(at, end)));
        at = end + 1;
        start = nl + 1;
      }
    }
    for (; nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
      frames.push(this.#finish(chunk.subarray(start, nl)));
      start = nl + 1;
    }
    if (start < chunk.length) this.#hold(chunk.subarray(start));
    return frames;
  }

  #decodeSpan(bytes: Uint8Array): string | null {
    return utf8OrNull(bytes, this.#utf8);
  }

  #hold(part: Uint8Array): void {
    this.#pendingBytes += part.length;
    this.#checkSize();
    this.#pending.push(part.slice());
  }

  #checkSize(bytes = this.#pendingBytes): void {
    if (bytes > this.maxFrameBytes) {
      throw new LimitError(`${this.stream} frame larger than ${sizeText(this.maxFrameBytes)} (frame ${this.#frames + 1})`);
    }
  }

  /** Completes a frame from held bytes plus `tail`, decoding its UTF-8 on its own. */
  #finish(tail: Uint8Array): MessageOutput<S> {
    const length = this.#pendingBytes + tail.length;
    this.#checkSize(length);
    const bytes = this.#pending.length === 0 ? tail : concatBytes([...this.#pending, tail], length);
    if (this.#pending.length > 0) this.#pending = [];
    this.#pendingBytes = 0;
    const text = utf8OrNull(bytes, this.#utf8);
    if (text === null) throw new ProtocolError(`${this.what} frame ${++this.#frames}: not valid UTF-8`);
    return this.#parse(length, text);
  }

  /** Checks and validates one frame of `length` bytes whose text is `text`. */
  #parse(length: number, text: string): MessageOutput<S> {
    this.#checkSize(length);
    const index = ++this.#frames;
    if (length === 0) throw new ProtocolError(`${this.what} frame ${index}: empty line`);
    try {
      return parseMessage(this.schema, text, this.what);
    } catch (error) {
      throw prefixed(error, `${this.what} frame ${index}: `);
    }
  }
}

/** The bytes of `parts` (their lengths sum to `total`) as one array. */
export function concatBytes(parts: Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
