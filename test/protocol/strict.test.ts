/**
 * "Every public v1 object schema is strict at every nested object boundary": unknown keys
 * fail at every depth, only options / env / lifecycleEnvironment are open, and any
 * protocolVersion other than 1 is refused before anything else. In both dialects.
 */
import { afterEach, describe, expect, test } from "bun:test";
import {
  Control,
  DescribeResponse,
  FrameDecoder,
  LifecycleRequest,
  LifecycleResponse,
  ProcessEvent,
  ProtocolError,
  encodeFrame,
  parseMessage,
  type MessageSchema,
} from "../../src/protocol/index.ts";

interface Sample {
  name: string;
  schema: MessageSchema;
  what: string;
  value: Record<string, unknown>;
}

const OPEN_MAPS = new Set(["options", "env", "lifecycleEnvironment"]);

const project = { projectId: "p", source: { kind: "host-directory", path: "/src/p" } };
const createRequest = (placement: unknown, source: unknown = project.source) => ({
  protocolVersion: 1,
  input: {
    workspaceId: "w",
    project: { projectId: "p", source },
    placement,
    markFirstAgentBranchAutoName: true,
    seedPaseoConfigFrom: "/seed",
  },
  options: { any: "thing" },
});
const changeRequest = (kind: string) => ({
  kind,
  forge: "github",
  changeRequestNumber: 7,
  githubPrNumber: 7,
  headRef: "fix",
  headRepositoryOwner: "octo",
  baseRefName: "main",
  checkoutRefs: [{ remoteName: "origin", remoteRef: "refs/pull/7/head" }, { remoteRef: "main" }],
  localBranchName: "pr-7",
  pushRemoteUrl: "git@example.com:octo/r.git",
  trackOriginHead: true,
});
const state = { workspaceId: "w", lifecycle: "ready", lifecycleEnvironment: { A: "1" } };
const placement = { cwd: "/workspace", hostVisiblePath: "/host/w" };
const spawn = (purpose: unknown, stdio: unknown = { kind: "pipes" }) => ({
  type: "spawn",
  protocolVersion: 1,
  argv: ["/bin/true"],
  cwd: "sub",
  env: { PATH: "/bin" },
  purpose,
  options: {},
  execId: "0123456789abcdef0123456789abcdef",
  stdio,
});

const req = (name: string, value: Record<string, unknown>): Sample => ({ name, schema: LifecycleRequest, what: "lifecycle request", value });
const res = (name: string, value: Record<string, unknown>): Sample => ({ name, schema: LifecycleResponse.seed, what: "lifecycle response", value });
const ctl = (name: string, value: Record<string, unknown>): Sample => ({ name, schema: Control, what: "control", value });
const evt = (name: string, value: Record<string, unknown>): Sample => ({ name, schema: ProcessEvent, what: "process event", value });

/** One valid message per shape of SPEC §2, every optional field present. */
const SAMPLES: Sample[] = [
  { name: "describe", schema: DescribeResponse, what: "describe response", value: { protocolVersion: 1, modes: ["pipes", "pty"], reconcile: true } },
  req("create / host-directory / existing", createRequest({ kind: "existing", relativeCwd: "a" })),
  req(
    "create / git / branch",
    createRequest(
      { kind: "branch", branchName: "b", baseRef: "main", relativeCwd: "a", worktreeSlug: "s" },
      { kind: "git", url: "https://example.com/r.git", revision: "", subdirectory: "pkg" },
    ),
  ),
  req("create / checkout", createRequest({ kind: "checkout", ref: "v1", relativeCwd: "a", worktreeSlug: "s" })),
  req(
    "create / resolved-worktree / branch-off",
    createRequest({ kind: "resolved-worktree", source: { kind: "branch-off", baseBranch: "main", branchName: "b" }, worktreeSlug: "s", relativeCwd: "a" }),
  ),
  req(
    "create / resolved-worktree / checkout-branch",
    createRequest({ kind: "resolved-worktree", source: { kind: "checkout-branch", branchName: "b" }, worktreeSlug: "s" }),
  ),
  req(
    "create / resolved-worktree / checkout-change-request",
    createRequest({ kind: "resolved-worktree", source: changeRequest("checkout-change-request"), worktreeSlug: "s" }),
  ),
  req(
    "create / resolved-worktree / checkout-github-pr",
    createRequest({ kind: "resolved-worktree", source: changeRequest("checkout-github-pr"), worktreeSlug: "s" }),
  ),
  req("inspect", { protocolVersion: 1, options: {} }),
  req("reconcile", { protocolVersion: 1, options: {}, workspaceIds: ["a", "b"] }),
  res("state", { type: "state", protocolVersion: 1, state, placement }),
  res("inspection / missing", { type: "inspection", protocolVersion: 1, inspection: { status: "missing" } }),
  res("inspection / paused", { type: "inspection", protocolVersion: 1, inspection: { status: "paused", state: { ...state, lifecycle: "paused" }, placement } }),
  res("inspection / ready", { type: "inspection", protocolVersion: 1, inspection: { status: "ready", state, placement } }),
  res("inspection / error", { type: "inspection", protocolVersion: 1, inspection: { status: "error", message: "broken" } }),
  res("ok", { type: "ok", protocolVersion: 1 }),
  ctl("spawn / agent", spawn({ kind: "agent", agentId: "a", provider: "claude" })),
  ctl("spawn / terminal", spawn({ kind: "terminal", terminalId: "t" })),
  ctl("spawn / git", spawn({ kind: "git" })),
  ctl("spawn / provider-probe", spawn({ kind: "provider-probe", provider: "codex" })),
  ctl("spawn / workspace-helper", spawn({ kind: "workspace-helper" })),
  ctl("spawn / workspace-script", spawn({ kind: "workspace-script", script: "verify" })),
  ctl("spawn / setup", spawn({ kind: "setup" })),
  ctl("spawn / archive", spawn({ kind: "archive" })),
  ctl("spawn / pty", spawn({ kind: "terminal", terminalId: "t" }, { kind: "pty", rows: 24, cols: 80, term: "xterm-256color" })),
  ctl("resize", { type: "resize", protocolVersion: 1, id: 0, rows: 40, cols: 120 }),
  ctl("signal", { type: "signal", protocolVersion: 1, signal: "SIGTERM" }),
  evt("started", { type: "started", protocolVersion: 1 }),
  evt("eof", { type: "eof", protocolVersion: 1 }),
  evt("resized", { type: "resized", protocolVersion: 1, id: 1 }),
  evt("exit / code", { type: "exit", protocolVersion: 1, code: 0, signal: null }),
  evt("exit / signal", { type: "exit", protocolVersion: 1, code: null, signal: "SIGKILL" }),
  evt("error", { type: "error", protocolVersion: 1, message: "runtime control failed" }),
];

const INSTANCE = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const laterCreate = (placement: unknown, source: unknown = { kind: "directory", path: "/src/p" }) => ({
  protocolVersion: 1,
  runtimeInstanceId: INSTANCE,
  input: { workspaceId: "w", project: { projectId: "p", source }, placement, purpose: "discovery", markFirstAgentBranchAutoName: true, seedPaseoConfigFrom: "/seed" },
  options: { any: "thing" },
});
const laterPlacement = { cwd: "/workspace" };
const laterSpawn = (kind: string, stdio: unknown = { kind: "pipes" }) => {
  const { type, protocolVersion, ...rest } = spawn({ kind }, stdio);
  return { type, protocolVersion, runtimeInstanceId: INSTANCE, ...rest };
};
const laterRes = (name: string, value: Record<string, unknown>): Sample => ({ name: `later ${name}`, schema: LifecycleResponse.later, what: "lifecycle response", value });

/** One valid message per shape of SPEC-later-dialect §2, every optional field present. */
const LATER_SAMPLES: Sample[] = [
  req("later create / directory / existing / discovery", laterCreate({ kind: "existing", relativeCwd: "a" })),
  req("later create / git / branch", laterCreate({ kind: "branch", branchName: "b", baseRef: "main", relativeCwd: "a", worktreeSlug: "s" }, { kind: "git", url: "https://e/r.git", revision: "", subdirectory: "pkg" })),
  req("later create / resolved-worktree / checkout-github-pr", laterCreate({ kind: "resolved-worktree", source: changeRequest("checkout-github-pr"), worktreeSlug: "s" })),
  req("later inspect", { protocolVersion: 1, runtimeInstanceId: INSTANCE, options: {} }),
  req("later reconcile", { protocolVersion: 1, runtimeInstanceId: INSTANCE, options: {}, workspaceIds: ["a"] }),
  laterRes("state", { type: "state", protocolVersion: 1, state, placement: laterPlacement, materializedFreshContent: true }),
  laterRes("inspection / paused", { type: "inspection", protocolVersion: 1, inspection: { status: "paused", state: { ...state, lifecycle: "paused" }, placement: laterPlacement } }),
  laterRes("inspection / ready", { type: "inspection", protocolVersion: 1, inspection: { status: "ready", state, placement: laterPlacement } }),
  laterRes("inspection / missing", { type: "inspection", protocolVersion: 1, inspection: { status: "missing" } }),
  laterRes("inspection / error", { type: "inspection", protocolVersion: 1, inspection: { status: "error", message: "m" } }),
  laterRes("ok", { type: "ok", protocolVersion: 1 }),
  ...["agent", "terminal", "git", "discovery", "workspace-helper", "workspace-script", "setup", "archive"].map((kind) => ctl(`later spawn / ${kind}`, laterSpawn(kind))),
  ctl("later spawn / pty", laterSpawn("terminal", { kind: "pty", rows: 24, cols: 80, term: "xterm-256color" })),
];

/** What a failure of a message read as the later dialect adds to its message. */
const laterNote = (sample: Sample) =>
  sample.schema === LifecycleResponse.later || !Object.hasOwn(sample.value, "runtimeInstanceId") ? "" : " (read as the later dialect because it has runtimeInstanceId)";

const ALL_SAMPLES = [...SAMPLES, ...LATER_SAMPLES];

/** Dot paths of every schema object inside `value` ("" is the message itself). */
function objectPaths(value: unknown, path: string[] = []): string[][] {
  if (Array.isArray(value)) return value.flatMap((item, index) => objectPaths(item, [...path, String(index)]));
  if (typeof value !== "object" || value === null) return [];
  const record = value as Record<string, unknown>;
  return [path, ...Object.keys(record).flatMap((key) => (OPEN_MAPS.has(key) ? [] : objectPaths(record[key], [...path, key])))];
}

/** A deep copy of `value` with an own enumerable `key` added at `path` (even `__proto__`). */
function inject(value: unknown, path: string[], key: string): unknown {
  const copy = JSON.parse(JSON.stringify(value));
  let target = copy;
  for (const step of path) target = target[step];
  Object.defineProperty(target, key, { value: "/", enumerable: true, writable: true, configurable: true });
  return copy;
}

const parse = (sample: Sample, value: unknown) => parseMessage(sample.schema, JSON.stringify(value), sample.what);

function expectRejected(run: () => unknown, message: string): void {
  let error: unknown;
  try {
    run();
  } catch (caught) {
    error = caught;
  }
  expect(error).toBeInstanceOf(ProtocolError);
  expect((error as Error).message).toBe(message);
}

describe("every sample is valid and canonical", () => {
  test.each(ALL_SAMPLES.map((sample) => [sample.name, sample]))("%s", (_, sample) => {
    const text = JSON.stringify(sample.value);
    expect(encodeFrame(sample.schema, parse(sample, sample.value), sample.what)).toBe(`${text}\n`);
  });

  test("the samples reach every nested object the brief names", () => {
    const reached = new Set(SAMPLES.flatMap((sample) => objectPaths(sample.value).map((path) => `${sample.what}:${path.join(".")}`)));
    const laterReached = new Set(LATER_SAMPLES.flatMap((sample) => objectPaths(sample.value).map((path) => `${sample.what}:${path.join(".")}`)));
    for (const path of [
      "describe response:",
      "lifecycle request:",
      "lifecycle request:input",
      "lifecycle request:input.project",
      "lifecycle request:input.project.source",
      "lifecycle request:input.placement",
      "lifecycle request:input.placement.source",
      "lifecycle request:input.placement.source.checkoutRefs.0",
      "lifecycle request:input.placement.source.checkoutRefs.1",
      "lifecycle response:state",
      "lifecycle response:placement",
      "lifecycle response:inspection",
      "lifecycle response:inspection.state",
      "lifecycle response:inspection.placement",
      "control:purpose",
      "control:stdio",
      "control:",
      "process event:",
    ]) {
      expect(reached).toContain(path);
      if (!path.startsWith("describe") && !path.startsWith("process event")) expect(laterReached).toContain(path);
    }
  });
});

describe("unknown keys are rejected at every depth, with their path", () => {
  const cases = ALL_SAMPLES.flatMap((sample) =>
    objectPaths(sample.value).flatMap((path) =>
      ["root", "unknownV1Field", "__proto__", "constructor", "prototype"].map((key) => [
        `${sample.name} › ${path.join(".") || "(top)"} › ${key}`,
        sample,
        path,
        key,
      ]),
    ),
  ) as [string, Sample, string[], string][];

  test.each(cases)("%s", (_, sample, path, key) => {
    const where = path.length ? `${path.join(".")}: ` : "";
    expectRejected(() => parse(sample, inject(sample.value, path, key)), `invalid ${sample.what}: ${where}unknown key ${JSON.stringify(key)}${laterNote(sample)}`);
  });

  test("the message reads like the contract's example", () => {
    const value = inject(SAMPLES[1]!.value, ["input", "project", "source"], "root");
    expectRejected(() => parseMessage(LifecycleRequest, JSON.stringify(value), "lifecycle request"), 'invalid lifecycle request: input.project.source: unknown key "root"');
  });

  test("the frame decoder reports the same path, with the frame number", () => {
    const decoder = new FrameDecoder(LifecycleRequest, "lifecycle request");
    const value = inject(SAMPLES[7]!.value, ["input", "placement", "source", "checkoutRefs", "1"], "unknownV1Field");
    expect(() => decoder.push(Buffer.from(`${JSON.stringify(value)}\n`))).toThrow(
      'lifecycle request frame 1: invalid lifecycle request: input.placement.source.checkoutRefs.1: unknown key "unknownV1Field"',
    );
  });

  test("the encoder refuses an unknown key too (private authority never leaks out)", () => {
    const leaked = { type: "state", protocolVersion: 1, state: { workspaceId: "w", lifecycle: "ready", root: "/srv/w" }, placement: { cwd: "/w" } };
    expect(() => encodeFrame(LifecycleResponse.seed, leaked as never, "lifecycle response")).toThrow('invalid lifecycle response: state: unknown key "root"');
  });
});

describe("open maps accept any key and keep every one of them", () => {
  const prototypeKeys = ["__proto__", "constructor", "prototype", "hasOwnProperty", "toString"];
  const snapshot = Object.getOwnPropertyNames(Object.prototype).sort();

  afterEach(() => {
    // Nothing in here may ever reach Object.prototype.
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(snapshot);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  const mapText = (values: (key: string) => string) => `{${prototypeKeys.map((key) => `${JSON.stringify(key)}:${values(key)}`).join(",")},"PASEO_X":"1"}`;
  const stringMapText = mapText((key) => JSON.stringify(`value-of-${key}`));
  const jsonMapText = mapText((key) => (key === "__proto__" ? `{"polluted":"yes"}` : `[1,{"constructor":null}]`));

  const cases: [string, MessageSchema, string, string[]][] = [
    ["options (lifecycle request)", LifecycleRequest, `{"protocolVersion":1,"options":${jsonMapText}}`, ["options"]],
    ["options (later lifecycle request)", LifecycleRequest, `{"protocolVersion":1,"runtimeInstanceId":"i","options":${jsonMapText}}`, ["options"]],
    ["env (later spawn)", Control, `{"type":"spawn","protocolVersion":1,"runtimeInstanceId":"i","argv":["x"],"env":${stringMapText},"purpose":{"kind":"git"},"options":{},"execId":"e","stdio":{"kind":"pipes"}}`, ["env"]],
    ["options (spawn)", Control, `{"type":"spawn","protocolVersion":1,"argv":["x"],"env":{},"purpose":{"kind":"git"},"options":${jsonMapText},"execId":"e","stdio":{"kind":"pipes"}}`, ["options"]],
    ["env (spawn)", Control, `{"type":"spawn","protocolVersion":1,"argv":["x"],"env":${stringMapText},"purpose":{"kind":"git"},"options":{},"execId":"e","stdio":{"kind":"pipes"}}`, ["env"]],
    [
      "lifecycleEnvironment (state)",
      LifecycleResponse.seed,
      `{"type":"state","protocolVersion":1,"state":{"workspaceId":"w","lifecycle":"ready","lifecycleEnvironment":${stringMapText}},"placement":{"cwd":"/"}}`,
      ["state", "lifecycleEnvironment"],
    ],
    [
      "lifecycleEnvironment (inspection)",
      LifecycleResponse.seed,
      `{"type":"inspection","protocolVersion":1,"inspection":{"status":"paused","state":{"workspaceId":"w","lifecycle":"paused","lifecycleEnvironment":${stringMapText}},"placement":{"cwd":"/"}}}`,
      ["inspection", "state", "lifecycleEnvironment"],
    ],
  ];

  test.each(cases)("%s: JSON.parse → parse → JSON.stringify keeps every key", (_, schema, text, path) => {
    const parsed = parseMessage(schema, text, "message") as Record<string, unknown>;
    expect(JSON.stringify(parsed)).toBe(text);
    expect(encodeFrame(schema, parsed, "message")).toBe(`${text}\n`);

    let map = parsed as Record<string, unknown>;
    for (const step of path) map = map[step] as Record<string, unknown>;
    expect(Object.keys(map)).toEqual([...prototypeKeys, "PASEO_X"]);
    for (const key of prototypeKeys) expect(Object.hasOwn(map, key)).toBe(true);
    // `__proto__` is data here, not the prototype.
    expect(Object.getPrototypeOf(map)).toBe(Object.prototype);
  });

  test("the same keys survive the frame decoder", () => {
    const text = cases[2]![2];
    const decoder = new FrameDecoder(Control, "control");
    const [frame] = decoder.push(Buffer.from(`${text}\n`));
    expect(JSON.stringify(frame)).toBe(text);
  });

  test("an env map built without a prototype is accepted as well", () => {
    const env = Object.create(null) as Record<string, string>;
    env.A = "1";
    const frame = encodeFrame(Control, { ...spawn({ kind: "git" }), env } as never, "control");
    expect(frame).toContain(`"env":{"A":"1"}`);
  });
});

describe("env and lifecycleEnvironment values must be strings", () => {
  const bad: [string, string, string][] = [
    ["a number", "1", "a number"],
    ["null", "null", "null"],
    ["a boolean", "true", "a boolean"],
    ["an object", `{"a":"b"}`, "an object"],
    ["an array", `["a"]`, "an array"],
  ];

  test.each(bad)("env value that is %s", (_, json, got) => {
    const text = `{"type":"spawn","protocolVersion":1,"argv":["x"],"env":{"OK":"1","BAD":${json}},"purpose":{"kind":"git"},"options":{},"execId":"e","stdio":{"kind":"pipes"}}`;
    expectRejected(() => parseMessage(Control, text, "control"), `invalid control: env: value of "BAD" must be a string, got ${got}`);
  });

  test.each(bad)("lifecycleEnvironment value that is %s", (_, json, got) => {
    const text = `{"type":"state","protocolVersion":1,"state":{"workspaceId":"w","lifecycle":"ready","lifecycleEnvironment":{"__proto__":${json}}},"placement":{"cwd":"/"}}`;
    expectRejected(
      () => parseMessage(LifecycleResponse.seed, text, "lifecycle response"),
      `invalid lifecycle response: state.lifecycleEnvironment: value of "__proto__" must be a string, got ${got}`,
    );
  });

  test.each([
    ["an array", `["A=1"]`],
    ["a string", `"A=1"`],
    ["null", "null"],
  ])("env that is %s instead of an object", (_, json) => {
    const text = `{"type":"spawn","protocolVersion":1,"argv":["x"],"env":${json},"purpose":{"kind":"git"},"options":{},"execId":"e","stdio":{"kind":"pipes"}}`;
    expect(() => parseMessage(Control, text, "control")).toThrow("invalid control: env: Invalid type: expected an object of strings");
  });

  test.each([
    ["an array", "[]"],
    ["a string", `"x"`],
    ["null", "null"],
  ])("options that is %s instead of an object", (_, json) => {
    expect(() => parseMessage(LifecycleRequest, `{"protocolVersion":1,"options":${json}}`, "lifecycle request")).toThrow(
      "invalid lifecycle request: options: Invalid type: expected an object",
    );
  });
});

describe("protocolVersion other than 1 is refused first, for every message", () => {
  const versions: [string, unknown, string][] = [
    ["2", 2, "unsupported protocolVersion (a number other than 1)"],
    ['"1"', "1", "unsupported protocolVersion (a string)"],
    ["0", 0, "unsupported protocolVersion (a number other than 1)"],
    ["1.5", 1.5, "unsupported protocolVersion (a number other than 1)"],
    ["null", null, "unsupported protocolVersion (null)"],
    ["missing", undefined, "missing protocolVersion"],
  ];
  const cases = ALL_SAMPLES.flatMap((sample) => versions.map(([label, version, prefix]) => [`${sample.name} with ${label}`, sample, version, prefix])) as [
    string,
    Sample,
    unknown,
    string,
  ][];

  test.each(cases)("%s", (_, sample, version, prefix) => {
    const value = { ...sample.value, protocolVersion: version };
    expectRejected(() => parse(sample, value), `${prefix} in ${sample.what}: this runtime supports only protocolVersion 1`);
  });

  test("the version is judged before any other problem in the message", () => {
    const text = `{"protocolVersion":2,"root":"/","options":[],"input":{"v2Field":true}}`;
    expectRejected(
      () => parseMessage(LifecycleRequest, text, "lifecycle request"),
      "unsupported protocolVersion (a number other than 1) in lifecycle request: this runtime supports only protocolVersion 1",
    );
  });

  test("the frame decoder refuses a version 2 frame the same way", () => {
    const decoder = new FrameDecoder(ProcessEvent, "process event");
    expect(() => decoder.push(Buffer.from(`{"type":"started","protocolVersion":2}\n`))).toThrow(
      "process event frame 1: unsupported protocolVersion (a number other than 1) in process event: this runtime supports only protocolVersion 1",
    );
  });

  test("a JSON value that is not an object is refused by name", () => {
    for (const [text, got] of [
      ["[]", "an array"],
      ["null", "null"],
      ["1", "a number"],
      [`"x"`, "a string"],
    ]) {
      expectRejected(() => parseMessage(ProcessEvent, text!, "process event"), `invalid process event: expected a JSON object, got ${got}`);
    }
  });
});
