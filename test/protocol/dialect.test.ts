/**
 * SPEC-later-dialect §6: `runtimeInstanceId` present ⇒ the later dialect, per message; each
 * message is then strict in its own dialect, and one that mixes the two is refused naming the
 * dialect it was read as and the field that broke it.
 */
import { describe, expect, test } from "bun:test";
import { Control, FrameDecoder, LifecycleRequest, ProtocolError, parseMessage, type MessageSchema } from "../../src/protocol/index.ts";

const H = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const LATER = "read as the later dialect because it has runtimeInstanceId, but this field is written the seed dialect's way: a message must not mix the two dialects";
const SEED = "read as the seed dialect because it has no runtimeInstanceId, but this field is written the later dialect's way: a message must not mix the two dialects";

const create = (source: unknown, extra: Record<string, unknown> = {}, head: Record<string, unknown> = {}) =>
  JSON.stringify({ protocolVersion: 1, ...head, input: { workspaceId: "w", project: { projectId: "p", source }, placement: { kind: "existing" }, ...extra }, options: {} });
const spawn = (purpose: unknown, head: Record<string, unknown> = {}) =>
  JSON.stringify({ type: "spawn", protocolVersion: 1, ...head, argv: ["x"], env: {}, purpose, options: {}, execId: "e", stdio: { kind: "pipes" } });
const later = { runtimeInstanceId: H };

function rejection(schema: MessageSchema, text: string, what: string): string {
  try {
    parseMessage(schema, text, what);
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${text}`);
}

describe("a message that mixes the two dialects is refused, naming the dialect and the field", () => {
  const cases: [string, MessageSchema, string, string][] = [
    [
      "later request with the seed source kind",
      LifecycleRequest,
      create({ kind: "host-directory", path: "/src" }, {}, later),
      `invalid lifecycle request: input.project.source.kind: Invalid type: expected ("directory" | "git"), got a string (${LATER})`,
    ],
    [
      "seed request with the later source kind",
      LifecycleRequest,
      create({ kind: "directory", path: "/src" }),
      `invalid lifecycle request: input.project.source.kind: Invalid type: expected ("host-directory" | "git"), got a string (${SEED})`,
    ],
    [
      "seed request with the later create purpose",
      LifecycleRequest,
      create({ kind: "git", url: "u", revision: "" }, { purpose: "discovery" }),
      `invalid lifecycle request: input: unknown key "purpose" (${SEED})`,
    ],
    ["later envelope with a seed agent purpose", Control, spawn({ kind: "agent", agentId: "a", provider: "claude" }, later), `invalid control: purpose: unknown key "agentId" (${LATER})`],
    ["later envelope with a seed terminal purpose", Control, spawn({ kind: "terminal", terminalId: "t" }, later), `invalid control: purpose: unknown key "terminalId" (${LATER})`],
    ["later envelope with a seed script purpose", Control, spawn({ kind: "workspace-script", script: "s" }, later), `invalid control: purpose: unknown key "script" (${LATER})`],
    [
      "later envelope with provider-probe",
      Control,
      spawn({ kind: "provider-probe", provider: "codex" }, later),
      `invalid control: purpose.kind: Invalid type: expected ("agent" | "terminal" | "discovery" | "workspace-script" | "git" | "workspace-helper" | "setup" | "archive"), got a string (${LATER})`,
    ],
    ["seed envelope with a bare agent purpose", Control, spawn({ kind: "agent" }), `invalid control: purpose.agentId: required key is missing (${SEED})`],
    [
      "seed envelope with the discovery purpose",
      Control,
      spawn({ kind: "discovery" }),
      `invalid control: purpose.kind: Invalid type: expected ("agent" | "terminal" | "provider-probe" | "workspace-script" | "git" | "workspace-helper" | "setup" | "archive"), got a string (${SEED})`,
    ],
  ];

  test.each(cases)("%s", (_, schema, text, message) => {
    expect(rejection(schema, text, schema === Control ? "control" : "lifecycle request")).toBe(message);
  });

  test("the fd 3 decoder refuses a mixed envelope with the same message and its frame number", () => {
    const decoder = new FrameDecoder(Control, "fd 3 control");
    expect(() => decoder.push(Buffer.from(`${spawn({ kind: "agent" })}\n`))).toThrow(`fd 3 control frame 1: invalid fd 3 control: purpose.agentId: required key is missing (${SEED})`);
  });
});

describe("each dialect alone is strict, and says how it was read", () => {
  test("an unknown key in a later message is refused as the later dialect's", () => {
    expect(rejection(LifecycleRequest, JSON.stringify({ protocolVersion: 1, ...later, options: {}, root: "/" }), "lifecycle request")).toBe(
      'invalid lifecycle request: unknown key "root" (read as the later dialect because it has runtimeInstanceId)',
    );
  });

  test("an unknown key in a seed message keeps the message it always had", () => {
    expect(rejection(LifecycleRequest, JSON.stringify({ protocolVersion: 1, options: {}, root: "/" }), "lifecycle request")).toBe('invalid lifecycle request: unknown key "root"');
  });

  test("a field wrong in both dialects is not called a mixture", () => {
    const text = create({ kind: "host-directory", path: "/src", root: "/" }, {}, later);
    expect(rejection(LifecycleRequest, text, "lifecycle request")).toBe(
      'invalid lifecycle request: input.project.source.kind: Invalid type: expected ("directory" | "git"), got a string (read as the later dialect because it has runtimeInstanceId)',
    );
  });

  test.each([
    ["empty", `""`, "runtimeInstanceId: Invalid min length: expected >=1, got an empty string"],
    ["a number", "7", "runtimeInstanceId: Invalid type: expected string, got a number"],
    ["null", "null", "runtimeInstanceId: Invalid type: expected string, got null"],
  ])("a runtimeInstanceId that is %s is refused", (_, json, message) => {
    expect(rejection(LifecycleRequest, `{"protocolVersion":1,"runtimeInstanceId":${json},"options":{}}`, "lifecycle request")).toBe(`invalid lifecycle request: ${message}`);
  });

  test("resize and signal frames are the same in both dialects and carry no instance id", () => {
    expect(parseMessage(Control, `{"type":"resize","protocolVersion":1,"id":1,"rows":2,"cols":3}`, "control")).toEqual({ type: "resize", protocolVersion: 1, id: 1, rows: 2, cols: 3 });
    expect(rejection(Control, `{"type":"signal","protocolVersion":1,"runtimeInstanceId":"${H}","signal":"SIGTERM"}`, "control")).toBe('invalid control: unknown key "runtimeInstanceId"');
  });

  test("the version is still judged first, in both dialects", () => {
    expect(rejection(LifecycleRequest, `{"protocolVersion":2,"runtimeInstanceId":"${H}","options":{}}`, "lifecycle request")).toBe(
      "unsupported protocolVersion (a number other than 1) in lifecycle request: this runtime supports only protocolVersion 1",
    );
  });

  test("detection is per message: one decoder takes frames of both dialects", () => {
    const decoder = new FrameDecoder(LifecycleRequest, "lifecycle request");
    const frames = decoder.push(Buffer.from(`{"protocolVersion":1,"options":{}}\n{"protocolVersion":1,"runtimeInstanceId":"${H}","options":{}}\n`));
    expect(frames.map((frame) => "runtimeInstanceId" in frame)).toEqual([false, true]);
  });
});
