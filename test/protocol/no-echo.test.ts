/**
 * What the runtime says about bad input names where it broke and what was expected, never the
 * input itself: a request or an envelope carries environments and tokens, and its diagnostic
 * lands in the daemon's logs. Malformed JSON says the byte offset and the expectation;
 * validation names the field, the expectation and the type that came; nesting too deep and
 * frames too large are refused in their own words.
 */
import { describe, expect, test } from "bun:test";
import { Control, FrameDecoder, LifecycleRequest, LimitError, MAX_FRAME_BYTES, MAX_JSON_DEPTH, ProtocolError, parseJsonText, parseMessage } from "../../src/protocol/index.ts";

const TOKEN = "ghp_Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lm";

function thrown(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error("nothing was thrown");
}

describe("malformed JSON: where it broke and what was expected, never the bytes", () => {
  test.each([
    ["a bare token where a value goes", `{"protocolVersion":1,"options":{"lifecycleEnvironment":{"T":${TOKEN}}}}`, "at byte 60: expected a JSON value"],
    ["a token after a complete value", `{"protocolVersion":1,"options":{}} ${TOKEN}`, "at byte 35: expected nothing more after the JSON value"],
    ["a string cut short", `{"protocolVersion":1,"options":{"k":"${TOKEN}`, "(the end of the text): expected the closing double quote of the string"],
    ["a bad escape inside a secret", `{"protocolVersion":1,"options":{"k":"${TOKEN}\\q"}}`, "expected a valid escape in the string"],
    ["a key without quotes", `{"protocolVersion":1,"options":{${TOKEN}:1}}`, 'at byte 32: expected a key in double quotes or "}"'],
    ["a missing colon", `{"protocolVersion":1,"options":{"${TOKEN}" 1}}`, 'expected ":" after the key'],
    ["a trailing comma", `{"protocolVersion":1,"options":{"a":"${TOKEN}",}}`, "expected a key in double quotes"],
    ["a raw newline in a string", `{"protocolVersion":1,"options":{"a":"${TOKEN}\n"}}`, "instead of a raw control character in the string"],
    ["a bad number", `{"protocolVersion":1,"options":{"a":-${TOKEN}}}`, "expected a digit"],
  ])("%s", (_what, text, where) => {
    const error = thrown(() => parseMessage(LifecycleRequest, text, "lifecycle request"));
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error.message).toStartWith("invalid lifecycle request: malformed JSON at byte ");
    expect(error.message).toContain(where);
    expect(error.message).not.toContain(TOKEN.slice(4, 12));
  });

  test("the offset counts bytes, not characters", () => {
    expect(thrown(() => parseJsonText('{"é":x}')).message).toBe("malformed JSON at byte 6: expected a JSON value (an object, array, string, number, true, false or null)");
  });

  test("the fd 3 decoder says the frame, the offset and the expectation", () => {
    const decoder = new FrameDecoder(Control, "fd 3 control", MAX_FRAME_BYTES, "fd 3");
    const error = thrown(() => decoder.push(Buffer.from(`{"type":"spawn","env":{"TOKEN":${TOKEN}}}\n`)));
    expect(error.message).toBe("fd 3 control frame 1: invalid fd 3 control: malformed JSON at byte 31: expected a JSON value (an object, array, string, number, true, false or null)");
  });
});

describe("validation names the field, the expectation and the type that came, never the value", () => {
  const request = (input: unknown) => JSON.stringify({ protocolVersion: 1, input, options: {} });
  const envelope = (fields: Record<string, unknown>) =>
    JSON.stringify({ type: "spawn", protocolVersion: 1, argv: ["true"], env: {}, purpose: { kind: "git" }, options: {}, execId: "e", stdio: { kind: "pipes" }, ...fields });

  test.each([
    ["a token as a source kind", LifecycleRequest, request({ workspaceId: "w", project: { projectId: "p", source: { kind: TOKEN, path: "/x" } }, placement: { kind: "existing" } }), "input.project.source.kind: Invalid type: expected"],
    ["a token as a number", LifecycleRequest, request({ workspaceId: 7, project: { projectId: "p", source: { kind: "git", url: "u", revision: "" } }, placement: { kind: "existing" } }), "input.workspaceId: Invalid type: expected string, got a number"],
    ["an env value that is not a string", Control, envelope({ env: { TOKEN: [TOKEN] } }), 'env: value of "TOKEN" must be a string, got an array'],
    ["env that is not an object", Control, envelope({ env: TOKEN }), "env: Invalid type: expected an object of strings, got a string"],
    ["a token as a stdio kind", Control, envelope({ stdio: { kind: TOKEN } }), "stdio.kind: Invalid type: expected"],
    ["a token as a signal name", Control, JSON.stringify({ type: "signal", protocolVersion: 1, signal: TOKEN }), "signal: not a signal name"],
    ["a token as the protocol version", Control, JSON.stringify({ type: "signal", protocolVersion: TOKEN, signal: "SIGTERM" }), "unsupported protocolVersion (a string)"],
  ])("%s", (_what, schema, text, message) => {
    const error = thrown(() => parseMessage(schema, text, "message"));
    expect(error.message).toContain(message);
    expect(error.message).not.toContain(TOKEN.slice(4, 12));
  });
});

describe("nesting and size have their own words", () => {
  const nested = (depth: number) => `{"protocolVersion":1,"options":{"x":${"[".repeat(depth)}${"]".repeat(depth)}}}`;

  test(`up to ${MAX_JSON_DEPTH} levels are read; one more is refused as nested deeper than ${MAX_JSON_DEPTH}`, () => {
    expect(parseMessage(LifecycleRequest, nested(MAX_JSON_DEPTH - 2), "lifecycle request").options).toHaveProperty("x");
    const error = thrown(() => parseMessage(LifecycleRequest, nested(MAX_JSON_DEPTH - 1), "lifecycle request"));
    expect(error).toBeInstanceOf(LimitError);
    expect(error.message).toBe(`invalid lifecycle request: nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
  });

  test("a 3 MB deeply nested value is refused in words, not by the stack", () => {
    const error = thrown(() => parseMessage(LifecycleRequest, nested(1_500_000), "lifecycle request"));
    expect(error).toBeInstanceOf(LimitError);
    expect(error.message).toContain("nested deeper than");
  });

  test("through the frame decoder the refusal stays a LimitError, with its frame number", () => {
    const decoder = new FrameDecoder(Control, "fd 3 control", MAX_FRAME_BYTES, "fd 3");
    const text = JSON.stringify({ type: "spawn", protocolVersion: 1, argv: ["true"], env: {}, purpose: { kind: "git" }, options: {}, execId: "e", stdio: { kind: "pipes" } });
    const error = thrown(() => decoder.push(Buffer.from(`${text.replace('"options":{}', `"options":{"x":${"[".repeat(500)}${"]".repeat(500)}}`)}\n`)));
    expect(error).toBeInstanceOf(LimitError);
    expect(error.message).toBe("fd 3 control frame 1: invalid fd 3 control: nested deeper than 128 levels of arrays and objects");
  });

  test("an fd 3 frame past the bound is `fd 3 frame larger than 1 MiB`", () => {
    const decoder = new FrameDecoder(Control, "fd 3 control", MAX_FRAME_BYTES, "fd 3");
    const error = thrown(() => decoder.push(new Uint8Array(MAX_FRAME_BYTES + 1).fill(0x20)));
    expect(error).toBeInstanceOf(LimitError);
    expect(error.message).toBe("fd 3 frame larger than 1 MiB (frame 1)");
  });
});
