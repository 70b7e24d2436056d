/** SPEC §3: every reference byte line decodes, validates and re-encodes to the same bytes. */
import { describe, expect, test } from "bun:test";
import type * as v from "valibot";
import {
  Control,
  DescribeResponse,
  FrameDecoder,
  LifecycleRequest,
  LifecycleResponse,
  ProcessEvent,
  encodeFrame,
  parseMessage,
} from "../../src/protocol/index.ts";

interface Vector {
  schema: v.GenericSchema;
  what: string;
  line: string;
}

const describeResponse = (line: string): Vector => ({ schema: DescribeResponse, what: "describe response", line });
const request = (line: string): Vector => ({ schema: LifecycleRequest, what: "lifecycle request", line });
const response = (line: string): Vector => ({ schema: LifecycleResponse, what: "lifecycle response", line });
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
    for (const schema of [DescribeResponse, LifecycleRequest, LifecycleResponse, Control, ProcessEvent]) {
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

describe("the encoder writes schema order, not insertion order", () => {
  test.each([...SPEC_LINES, ...DAEMON_LINES, ...MORE_LINES].map((vector) => [vector.line, vector]))(
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
    for (const { schema, what, line } of [...SPEC_LINES, ...DAEMON_LINES, ...MORE_LINES]) {
      const frame = encodeFrame(schema, JSON.parse(line), what);
      expect(frame.endsWith("\n")).toBe(true);
      expect(frame.indexOf("\n")).toBe(frame.length - 1);
    }
  });
});
