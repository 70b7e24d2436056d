/**
 * SPEC §3 and SPEC-later-dialect §3: every reference byte line of both dialects decodes,
 * validates and re-encodes to the same bytes.
 */
import { describe, expect, test } from "bun:test";
import {
  Control,
  DescribeResponse,
  FrameDecoder,
  LifecycleRequest,
  LifecycleResponse,
  ProcessEvent,
  dialectOf,
  encodeFrame,
  parseMessage,
  type Dialect,
  type MessageSchema,
} from "../../src/protocol/index.ts";

interface Vector {
  schema: MessageSchema;
  what: string;
  line: string;
}

const describeResponse = (line: string): Vector => ({ schema: DescribeResponse, what: "describe response", line });
const request = (line: string): Vector => ({ schema: LifecycleRequest, what: "lifecycle request", line });
const response = (line: string, dialect: Dialect = "seed"): Vector => ({ schema: LifecycleResponse[dialect], what: "lifecycle response", line });
const laterResponse = (line: string) => response(line, "later");
const control = (line: string): Vector => ({ schema: Control, what: "control", line });
const event = (line: string): Vector => ({ schema: ProcessEvent, what: "process event", line });

/** The reference lines of SPEC §3, copied byte for byte. */
const SPEC_LINES: Vector[] = [
  describeResponse(`{"protocolVersion":1,"modes":["pipes","pty"],"reconcile":true}`),
  request(
    `{"protocolVersion":1,"input":{"workspaceId":"workspace-01","project":{"projectId":"project-01","source":{"kind":"host-directory","path":"/source/project"}},"placement":{"kind":"existing"}},"options":{}}`,
  ),
  response(`{"type":"state","protocolVersion":1,"state":{"workspaceId":"workspace-01","lifecycle":"ready"},"placement":{"cwd":"/workspace"}}`),
  control(
    `{"type":"spawn","protocolVersion":1,"argv":["/bin/sh","-c","printf hello"],"cwd":"packages/app","env":{"PATH":"/usr/bin:/bin"},"purpose":{"kind":"workspace-script","script":"verify"},"options":{},"execId":"exec-pipe-01","stdio":{"kind":"pipes"}}`,
  ),
  control(
    `{"type":"spawn","protocolVersion":1,"argv":["/bin/sh","-c","printf hello"],"cwd":"packages/app","env":{"PATH":"/usr/bin:/bin"},"purpose":{"kind":"workspace-script","script":"verify"},"options":{},"execId":"exec-pty-01","stdio":{"kind":"pty","rows":24,"cols":80,"term":"xterm-256color"}}`,
  ),
  control(`{"type":"resize","protocolVersion":1,"id":1,"rows":40,"cols":120}`),
  control(`{"type":"signal","protocolVersion":1,"signal":"SIGTERM"}`),
  event(`{"type":"started","protocolVersion":1}`),
  event(`{"type":"eof","protocolVersion":1}`),
  event(`{"type":"resized","protocolVersion":1,"id":1}`),
  event(`{"type":"exit","protocolVersion":1,"code":0,"signal":null}`),
  event(`{"type":"exit","protocolVersion":1,"code":null,"signal":"SIGTERM"}`),
  event(`{"type":"error","protocolVersion":1,"message":"runtime control failed"}`),
];

/** "Frames the daemon sends in practice" (SPEC §3). */
const DAEMON_LINES: Vector[] = [
  request(`{"protocolVersion":1,"options":{}}`),
  request(`{"protocolVersion":1,"options":{"stateDirectory":"/var/lib/paseo","nested":{"a":[1,true,null]}},"workspaceIds":["a","b"]}`),
  request(`{"protocolVersion":1,"options":{},"workspaceIds":[]}`),
  control(
    `{"type":"spawn","protocolVersion":1,"argv":["paseo-workspace-helper","describe"],"env":{},"purpose":{"kind":"workspace-helper"},"options":{},"execId":"0123456789abcdef0123456789abcdef","stdio":{"kind":"pipes"}}`,
  ),
];

/** Further shapes of SPEC §2 written in canonical order, so every variant has a vector. */
const MORE_LINES: Vector[] = [
  describeResponse(`{"protocolVersion":1,"modes":["pipes"],"reconcile":false}`),
  request(
    `{"protocolVersion":1,"input":{"workspaceId":"w","project":{"projectId":"p","source":{"kind":"git","url":"https://example.com/r.git","revision":"","subdirectory":"pkg"}},"placement":{"kind":"branch","branchName":"feature","baseRef":"main","relativeCwd":"src","worktreeSlug":"feature"},"markFirstAgentBranchAutoName":true,"seedPaseoConfigFrom":"/seed"},"options":{"k":"v"}}`,
  ),
  request(
    `{"protocolVersion":1,"input":{"workspaceId":"w","project":{"projectId":"p","source":{"kind":"host-directory","path":"/p"}},"placement":{"kind":"resolved-worktree","source":{"kind":"checkout-github-pr","forge":"github","changeRequestNumber":7,"githubPrNumber":7,"headRef":"fix","headRepositoryOwner":"octo","baseRefName":"main","checkoutRefs":[{"remoteName":"origin","remoteRef":"refs/pull/7/head"},{"remoteRef":"main"}],"localBranchName":"pr-7","pushRemoteUrl":"git@example.com:octo/r.git","trackOriginHead":false},"worktreeSlug":"pr-7","relativeCwd":"."}},"options":{}}`,
  ),
  response(
    `{"type":"state","protocolVersion":1,"state":{"workspaceId":"w","lifecycle":"paused","lifecycleEnvironment":{"PASEO_X":"1"}},"placement":{"cwd":"/workspace","hostVisiblePath":"/host/w"}}`,
  ),
  response(`{"type":"inspection","protocolVersion":1,"inspection":{"status":"missing"}}`),
  response(
    `{"type":"inspection","protocolVersion":1,"inspection":{"status":"ready","state":{"workspaceId":"w","lifecycle":"ready"},"placement":{"cwd":"/workspace"}}}`,
  ),
  response(`{"type":"inspection","protocolVersion":1,"inspection":{"status":"error","message":"store unreadable"}}`),
  response(`{"type":"ok","protocolVersion":1}`),
  control(
    `{"type":"spawn","protocolVersion":1,"argv":["claude"],"env":{"λ":"ü"},"purpose":{"kind":"agent","agentId":"a1","provider":"claude"},"options":{},"execId":"e","stdio":{"kind":"pty","rows":1,"cols":65535}}`,
  ),
  event(`{"type":"exit","protocolVersion":1,"code":255,"signal":null}`),
];

/** The later dialect's instance id of the reference lines, and `H` of its "in practice" lines. */
const H = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/** SPEC-later-dialect §3 (examples/v1.json of getpaseo/paseo 5f2747b0), byte for byte, in order. */
const LATER_LINES: Vector[] = [
  describeResponse(`{"protocolVersion":1,"modes":["pipes","pty"],"reconcile":true}`),
  request(
    `{"protocolVersion":1,"runtimeInstanceId":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","input":{"workspaceId":"workspace-01","project":{"projectId":"project-01","source":{"kind":"git","url":"https://example.test/acme/project.git","revision":"main","subdirectory":"packages/app"}},"placement":{"kind":"existing"},"purpose":"discovery"},"options":{}}`,
  ),
  laterResponse(`{"type":"state","protocolVersion":1,"state":{"workspaceId":"workspace-01","lifecycle":"ready"},"placement":{"cwd":"/workspace"},"materializedFreshContent":true}`),
  control(
    `{"type":"spawn","protocolVersion":1,"runtimeInstanceId":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","argv":["/bin/sh","-c","printf hello"],"cwd":"packages/app","env":{"PATH":"/usr/bin:/bin"},"purpose":{"kind":"workspace-script"},"options":{},"execId":"exec-pipe-01","stdio":{"kind":"pipes"}}`,
  ),
  control(
    `{"type":"spawn","protocolVersion":1,"runtimeInstanceId":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","argv":["/bin/sh","-c","printf hello"],"cwd":"packages/app","env":{"PATH":"/usr/bin:/bin"},"purpose":{"kind":"workspace-script"},"options":{},"execId":"exec-pty-01","stdio":{"kind":"pty","rows":24,"cols":80,"term":"xterm-256color"}}`,
  ),
  control(`{"type":"resize","protocolVersion":1,"id":1,"rows":40,"cols":120}`),
  control(`{"type":"signal","protocolVersion":1,"signal":"SIGTERM"}`),
  event(`{"type":"started","protocolVersion":1}`),
  event(`{"type":"eof","protocolVersion":1}`),
  event(`{"type":"resized","protocolVersion":1,"id":1}`),
  event(`{"type":"exit","protocolVersion":1,"code":0,"signal":null}`),
  event(`{"type":"error","protocolVersion":1,"message":"runtime control failed"}`),
];

/** SPEC-later-dialect §3 "in practice" lines, with H the 64-hex id. */
const LATER_DAEMON_LINES: Vector[] = [
  request(`{"protocolVersion":1,"runtimeInstanceId":"${H}","options":{}}`),
  request(`{"protocolVersion":1,"runtimeInstanceId":"${H}","options":{},"workspaceIds":["a","b"]}`),
  request(`{"protocolVersion":1,"runtimeInstanceId":"${H}","input":{"workspaceId":"w","project":{"projectId":"p","source":{"kind":"directory","path":"/src"}},"placement":{"kind":"existing"}},"options":{}}`),
  control(
    `{"type":"spawn","protocolVersion":1,"runtimeInstanceId":"${H}","argv":["paseo-workspace-helper","describe"],"env":{},"purpose":{"kind":"workspace-helper"},"options":{},"execId":"0123456789abcdef0123456789abcdef","stdio":{"kind":"pipes"}}`,
  ),
  laterResponse(`{"type":"state","protocolVersion":1,"state":{"workspaceId":"w","lifecycle":"ready"},"placement":{"cwd":"/workspace"},"materializedFreshContent":false}`),
];

/** Further later-dialect shapes in canonical order: every field its spec adds or changes. */
const LATER_MORE_LINES: Vector[] = [
  request(
    `{"protocolVersion":1,"runtimeInstanceId":"i","input":{"workspaceId":"w","project":{"projectId":"p","source":{"kind":"directory","path":"/p"}},"placement":{"kind":"branch","branchName":"b","baseRef":"main","relativeCwd":"src","worktreeSlug":"b"},"purpose":"discovery","markFirstAgentBranchAutoName":true,"seedPaseoConfigFrom":"/seed"},"options":{"k":[1,{"x":null}]},"workspaceIds":[]}`,
  ),
  laterResponse(`{"type":"state","protocolVersion":1,"state":{"workspaceId":"w","lifecycle":"ready","lifecycleEnvironment":{"PASEO_X":"1"}},"placement":{"cwd":"/workspace"}}`),
  laterResponse(`{"type":"inspection","protocolVersion":1,"inspection":{"status":"paused","state":{"workspaceId":"w","lifecycle":"paused"},"placement":{"cwd":"/workspace"}}}`),
  laterResponse(`{"type":"inspection","protocolVersion":1,"inspection":{"status":"missing"}}`),
  laterResponse(`{"type":"ok","protocolVersion":1}`),
  ...["agent", "terminal", "git", "discovery", "workspace-helper", "workspace-script", "setup", "archive"].map((kind) =>
    control(`{"type":"spawn","protocolVersion":1,"runtimeInstanceId":"i","argv":["x"],"env":{},"purpose":{"kind":"${kind}"},"options":{},"execId":"e","stdio":{"kind":"pipes"}}`),
  ),
];

const ALL_LINES = [...SPEC_LINES, ...DAEMON_LINES, ...MORE_LINES, ...LATER_LINES, ...LATER_DAEMON_LINES, ...LATER_MORE_LINES];

const OPEN_MAPS = new Set(["options", "env", "lifecycleEnvironment"]);

/**
 * Reverses the key order of every schema object (arrays keep their order). Open maps are
 * kept as they are: their keys have no schema order, so their insertion order is the data.
 */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (typeof value !== "object" || value === null) return value;
  const record = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(record)
      .reverse()
      .map((key) => [key, OPEN_MAPS.has(key) ? record[key] : reverseKeys(record[key])]),
  );
}

function checkRoundTrip({ schema, what, line }: Vector): void {
  const bytes = `${line}\n`;
  const decoder = new FrameDecoder(schema, what);
  const frames = decoder.push(new TextEncoder().encode(bytes));
  decoder.end();
  expect(frames).toHaveLength(1);
  expect(encodeFrame(schema, frames[0], what)).toBe(bytes);
  expect(encodeFrame(schema, parseMessage(schema, line, what), what)).toBe(bytes);
}

describe("SPEC §3 reference bytes", () => {
  test.each(SPEC_LINES.map((vector) => [vector.line, vector]))("decode → encode is identical: %s", (_, vector) => {
    checkRoundTrip(vector);
  });

  test("the lines of each message family decode from one stream, in order", () => {
    for (const schema of [DescribeResponse, LifecycleRequest, LifecycleResponse.seed, Control, ProcessEvent]) {
      const lines = SPEC_LINES.filter((vector) => vector.schema === schema);
      const decoder = new FrameDecoder(schema, "frame");
      const joined = new TextEncoder().encode(lines.map((vector) => `${vector.line}\n`).join(""));
      const frames = decoder.push(joined);
      decoder.end();
      expect(frames).toHaveLength(lines.length);
      expect(frames.map((frame) => encodeFrame(schema, frame, "frame")).join("")).toBe(new TextDecoder().decode(joined));
    }
  });
});

describe("frames the daemon sends in practice", () => {
  test.each(DAEMON_LINES.map((vector) => [vector.line, vector]))("decode → encode is identical: %s", (_, vector) => {
    checkRoundTrip(vector);
  });
});

describe("every other SPEC §2 shape", () => {
  test.each(MORE_LINES.map((vector) => [vector.line, vector]))("decode → encode is identical: %s", (_, vector) => {
    checkRoundTrip(vector);
  });
});

describe("SPEC-later-dialect §3 reference bytes", () => {
  test.each([...LATER_LINES, ...LATER_DAEMON_LINES, ...LATER_MORE_LINES].map((vector) => [vector.line, vector]))("decode → encode is identical: %s", (_, vector) => {
    checkRoundTrip(vector);
  });

  test("lifecycle requests and spawn envelopes of each dialect are read as that dialect", () => {
    for (const { schema, line } of ALL_LINES) {
      if (schema !== LifecycleRequest && schema !== Control) continue;
      const message = parseMessage(schema, line, "message") as object;
      expect(dialectOf(message)).toBe(line.includes(`"runtimeInstanceId"`) ? "later" : "seed");
    }
  });

  test("the lines of each family decode from one stream, in order", () => {
    for (const schema of [DescribeResponse, LifecycleRequest, LifecycleResponse.later, Control, ProcessEvent]) {
      const lines = LATER_LINES.filter((vector) => vector.schema === schema);
      const decoder = new FrameDecoder(schema, "frame");
      const joined = new TextEncoder().encode(lines.map((vector) => `${vector.line}\n`).join(""));
      const frames = decoder.push(joined);
      decoder.end();
      expect(frames).toHaveLength(lines.length);
      expect(frames.map((frame) => encodeFrame(schema, frame, "frame")).join("")).toBe(new TextDecoder().decode(joined));
    }
  });

  test("describe is the same bytes in both dialects", () => {
    expect(LATER_LINES[0]!.line).toBe(SPEC_LINES[0]!.line);
  });

  test("a later create response never validates as seed, a seed placement never as later", () => {
    expect(() => parseMessage(LifecycleResponse.seed, LATER_LINES[2]!.line, "lifecycle response")).toThrow('unknown key "materializedFreshContent"');
    const seedWithHostPath = `{"type":"state","protocolVersion":1,"state":{"workspaceId":"w","lifecycle":"paused"},"placement":{"cwd":"/workspace","hostVisiblePath":"/host/w"}}`;
    expect(() => parseMessage(LifecycleResponse.later, seedWithHostPath, "lifecycle response")).toThrow('placement: unknown key "hostVisiblePath"');
  });
});

describe("the encoder writes schema order, not insertion order", () => {
  test.each(ALL_LINES.map((vector) => [vector.line, vector]))(
    "keys given in reverse still encode to: %s",
    (_, { schema, what, line }) => {
      const reversed = reverseKeys(JSON.parse(line));
      expect(JSON.stringify(reversed)).not.toBe(line);
      expect(encodeFrame(schema, reversed as never, what)).toBe(`${line}\n`);
    },
  );

  test("open maps keep the order their keys arrived in", () => {
    const line = `{"protocolVersion":1,"options":{"z":1,"a":{"y":2,"b":3}}}`;
    expect(encodeFrame(LifecycleRequest, parseMessage(LifecycleRequest, line, "request"), "request")).toBe(`${line}\n`);
  });

  test("absent optionals are dropped, never written as null", () => {
    expect(encodeFrame(DescribeResponse, { protocolVersion: 1, modes: ["pipes"], reconcile: undefined }, "describe")).toBe(
      `{"protocolVersion":1,"modes":["pipes"]}\n`,
    );
  });

  test("encoding validates first: an invalid value is never written", () => {
    expect(() => encodeFrame(ProcessEvent, { type: "started", protocolVersion: 1, extra: 1 } as never, "process event")).toThrow(
      'invalid process event: unknown key "extra"',
    );
    expect(() => encodeFrame(Control, { type: "resize", protocolVersion: 1, id: 1, rows: 0, cols: 80 }, "control")).toThrow(
      "invalid control: rows:",
    );
  });

  test("every frame ends with exactly one newline and holds no other", () => {
    for (const { schema, what, line } of ALL_LINES) {
      const frame = encodeFrame(schema, JSON.parse(line), what);
      expect(frame.endsWith("\n")).toBe(true);
      expect(frame.indexOf("\n")).toBe(frame.length - 1);
    }
  });
});
