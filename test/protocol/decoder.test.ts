/**
 * SPEC §3 decoding: "a frame may arrive in any number of chunks; an empty line, malformed
 * JSON, a schema failure, or bytes left without a final \n at EOF are all errors."
 */
import { describe, expect, test } from "bun:test";
import { Control, FrameDecoder, MAX_FRAME_BYTES, ProcessEvent, ProtocolError } from "../../src/protocol/index.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

const STARTED = `{"type":"started","protocolVersion":1}`;
const EOF = `{"type":"eof","protocolVersion":1}`;
const EXIT = `{"type":"exit","protocolVersion":1,"code":0,"signal":null}`;
const LAMBDA_FRAME = `{"type":"spawn","protocolVersion":1,"argv":["echo","λ"],"env":{},"purpose":{"kind":"git"},"options":{},"execId":"e","stdio":{"kind":"pipes"}}`;
const SPAWN = `{"type":"spawn","protocolVersion":1,"argv":["/bin/echo","λ ü 😀"],"env":{"GREETING":"γειά"},"purpose":{"kind":"git"},"options":{},"execId":"e","stdio":{"kind":"pipes"}}`;

const events = () => new FrameDecoder(ProcessEvent, "process event");
const controls = () => new FrameDecoder(Control, "control");

/** Feeds `chunks` and returns every frame re-serialized, then checks EOF is clean. */
function feed(decoder: FrameDecoder<typeof ProcessEvent> | FrameDecoder<typeof Control>, chunks: Uint8Array[]): string[] {
  const out: string[] = [];
  for (const chunk of chunks) for (const frame of decoder.push(chunk)) out.push(JSON.stringify(frame));
  decoder.end();
  return out;
}

function thrown(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return error as Error;
  }
  throw new Error("expected a ProtocolError, nothing was thrown");
}

describe("chunking never changes the frames", () => {
  const stream = bytes(`${STARTED}\n${EOF}\n${EXIT}\n`);

  test("several frames in one chunk come out in order", () => {
    expect(feed(events(), [stream])).toEqual([STARTED, EOF, EXIT]);
  });

  test("partial chunks: a frame split in two, and a chunk carrying the end of one and the start of the next", () => {
    const cut = STARTED.length - 5;
    const chunks = [stream.subarray(0, cut), stream.subarray(cut, STARTED.length + 10), stream.subarray(STARTED.length + 10)];
    expect(feed(events(), chunks)).toEqual([STARTED, EOF, EXIT]);
  });

  test("the newline arriving alone in its own chunk completes the frame", () => {
    const decoder = events();
    expect(decoder.push(bytes(STARTED))).toEqual([]);
    expect(decoder.pendingBytes).toBe(STARTED.length);
    expect(decoder.push(bytes("\n")).map((frame) => JSON.stringify(frame))).toEqual([STARTED]);
    expect(decoder.pendingBytes).toBe(0);
  });

  test("byte-at-a-time delivery", () => {
    const chunks = Array.from(stream, (byte) => Uint8Array.of(byte));
    expect(feed(events(), chunks)).toEqual([STARTED, EOF, EXIT]);
  });

  test("every possible single cut point gives the same frames", () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      expect(feed(events(), [stream.subarray(0, cut), stream.subarray(cut)])).toEqual([STARTED, EOF, EXIT]);
    }
  });

  test("empty chunks are harmless", () => {
    expect(feed(events(), [new Uint8Array(0), stream, new Uint8Array(0)])).toEqual([STARTED, EOF, EXIT]);
  });
});

describe("multi-byte UTF-8", () => {
  test("a frame split inside λ (2 bytes) decodes intact", () => {
    const frame = bytes(`${LAMBDA_FRAME}\n`);
    const lambda = frame.indexOf(0xce); // λ = CE BB
    expect(frame[lambda + 1]).toBe(0xbb);
    const frames = feed(controls(), [frame.subarray(0, lambda + 1), frame.subarray(lambda + 1)]);
    expect(frames).toEqual([LAMBDA_FRAME]);
  });

  test("a spawn with 2-, 3- and 4-byte characters survives byte-at-a-time delivery", () => {
    const frame = bytes(`${SPAWN}\n`);
    expect(feed(controls(), Array.from(frame, (byte) => Uint8Array.of(byte)))).toEqual([SPAWN]);
  });

  test("invalid UTF-8 is rejected, never replaced", () => {
    const frame = bytes(`{"type":"signal","protocolVersion":1,"signal":"SIGTERM"}\n`);
    frame[frame.indexOf(0x53)] = 0xff; // 'S' of SIGTERM → a byte that is never UTF-8
    expect(thrown(() => controls().push(frame)).message).toBe("control frame 1: not valid UTF-8");
  });

  test("a truncated multi-byte character before the newline is invalid UTF-8", () => {
    const frame = bytes(`${LAMBDA_FRAME}\n`);
    const lambda = frame.indexOf(0xce);
    const broken = new Uint8Array([...frame.subarray(0, lambda + 1), ...frame.subarray(lambda + 2)]);
    expect(thrown(() => controls().push(broken)).message).toBe("control frame 1: not valid UTF-8");
  });

  test("a byte-order mark is not silently dropped", () => {
    const frame = new Uint8Array([0xef, 0xbb, 0xbf, ...bytes(`${STARTED}\n`)]);
    expect(thrown(() => events().push(frame)).message).toStartWith("process event frame 1: invalid process event: malformed JSON");
  });
});

describe("bad frames", () => {
  test("malformed JSON names the frame", () => {
    const decoder = events();
    expect(decoder.push(bytes(`${STARTED}\n`))).toHaveLength(1);
    expect(thrown(() => decoder.push(bytes(`{"type":"eof",\n`))).message).toStartWith("process event frame 2: invalid process event: malformed JSON");
  });

  test("an empty line", () => {
    expect(thrown(() => events().push(bytes("\n"))).message).toBe("process event frame 1: empty line");
    const decoder = events();
    expect(thrown(() => decoder.push(bytes(`${STARTED}\n\n${EOF}\n`))).message).toBe("process event frame 2: empty line");
  });

  test("a schema failure names the frame and the field", () => {
    expect(thrown(() => events().push(bytes(`{"type":"resized","protocolVersion":1,"id":-1}\n`))).message).toStartWith(
      "process event frame 1: invalid process event: id: ",
    );
  });

  test("two JSON values on one line", () => {
    expect(thrown(() => events().push(bytes(`${STARTED}${EOF}\n`))).message).toStartWith("process event frame 1: invalid process event: malformed JSON");
  });

  test("EOF mid-frame: end() throws with the number of bytes left", () => {
    const decoder = events();
    expect(decoder.push(bytes(`${STARTED}\n${EOF}`))).toHaveLength(1);
    expect(thrown(() => decoder.end()).message).toBe(`process event frame 2: ${EOF.length} bytes without a final newline at EOF`);
  });

  test("EOF after a complete frame, and EOF on an empty stream, are clean", () => {
    const decoder = events();
    decoder.push(bytes(`${STARTED}\n`));
    expect(() => decoder.end()).not.toThrow();
    expect(() => events().end()).not.toThrow();
  });

  test("after the first error the decoder stays broken", () => {
    const decoder = events();
    const first = thrown(() => decoder.push(bytes("\n")));
    expect(thrown(() => decoder.push(bytes(`${STARTED}\n`)))).toBe(first);
    expect(thrown(() => decoder.end())).toBe(first);
  });
});

describe(`frames are bounded by MAX_FRAME_BYTES (${MAX_FRAME_BYTES} bytes, newline excluded)`, () => {
  /** An error event whose frame is exactly `size` bytes long. */
  const errorFrame = (size: number) => {
    const head = `{"type":"error","protocolVersion":1,"message":"`;
    const tail = `"}`;
    return `${head}${"x".repeat(size - head.length - tail.length)}${tail}`;
  };

  test("a frame of exactly the bound is accepted", () => {
    const frame = errorFrame(MAX_FRAME_BYTES);
    expect(bytes(frame).length).toBe(MAX_FRAME_BYTES);
    expect(events().push(bytes(`${frame}\n`))).toHaveLength(1);
  });

  test("one byte more is rejected", () => {
    expect(thrown(() => events().push(bytes(`${errorFrame(MAX_FRAME_BYTES + 1)}\n`))).message).toBe(
      "process event frame larger than 1 MiB (frame 1)",
    );
  });

  test("an oversize frame is rejected as soon as it passes the bound, without waiting for a newline", () => {
    const decoder = events();
    const half = new Uint8Array(MAX_FRAME_BYTES / 2).fill(0x78);
    decoder.push(half);
    decoder.push(half);
    expect(decoder.pendingBytes).toBe(MAX_FRAME_BYTES);
    expect(thrown(() => decoder.push(Uint8Array.of(0x78))).message).toBe("process event frame larger than 1 MiB (frame 1)");
  });

  test("one huge chunk without any newline is rejected at once", () => {
    expect(thrown(() => events().push(new Uint8Array(MAX_FRAME_BYTES + 1).fill(0x20))).message).toBe(
      "process event frame larger than 1 MiB (frame 1)",
    );
  });

  test("the bound applies per frame, not per stream", () => {
    const frame = `${errorFrame(MAX_FRAME_BYTES - 10)}\n`;
    const decoder = events();
    expect(decoder.push(bytes(frame + frame + frame))).toHaveLength(3);
    decoder.end();
  });

  test("a smaller bound can be chosen per decoder", () => {
    const decoder = new FrameDecoder(ProcessEvent, "process event", 16);
    expect(thrown(() => decoder.push(bytes(STARTED))).message).toBe("process event frame larger than 16 bytes (frame 1)");
  });
});
