/**
 * The compiled binary, driven the way the daemon drives it: exact describe bytes, usage
 * errors, and lifecycle input that is refused before anything changes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, closeSync, mkdirSync, openSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { capabilitiesLine } from "../../src/protocol/capabilities.ts";
import { BIN, request, runBinary, type RunResult } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { linuxOnly } from "../support/platform.ts";

const DESCRIBE = `{"protocolVersion":1,"modes":["pipes","pty"],"reconcile":true}\n`;
/** /dev/full, a stdout that refuses every write with ENOSPC, is Linux's. */
const NO_DEV_FULL = linuxOnly("cli/binary.test.ts, describe into a full stdout", "/dev/full");

const PACKAGE_VERSION: string = JSON.parse(readFileSync(join(import.meta.dir, "..", "..", "package.json"), "utf8")).version;

/** A fresh, empty runtime home (and HOME / XDG_STATE_HOME, so no fallback reaches the real ones). */
let sandbox: ReturnType<typeof tempDir>;
let home: string;
let env: Record<string, string>;

beforeAll(() => {
  sandbox = tempDir();
  home = join(sandbox.path, "runtime-home");
  mkdirSync(home, { mode: 0o700 });
  chmodSync(home, 0o700);
  mkdirSync(join(sandbox.path, "home"));
  mkdirSync(join(sandbox.path, "xdg-state"));
  env = { PASEO_HOST_RUNTIME_HOME: home, HOME: join(sandbox.path, "home"), XDG_STATE_HOME: join(sandbox.path, "xdg-state") };
});

afterAll(() => sandbox.cleanup());

/** Every file under the sandbox, relative to it (directories end with /). */
function sandboxFiles(): string[] {
  return readdirSync(sandbox.path, { recursive: true, withFileTypes: true })
    .map((entry) => join(entry.parentPath, entry.name).slice(sandbox.path.length + 1) + (entry.isDirectory() ? "/" : ""))
    .sort();
}

const EMPTY_SANDBOX = ["home/", "runtime-home/", "xdg-state/"];

/** Runs a lifecycle op with `stdin` and checks it failed cleanly and changed nothing. */
async function expectRefused(args: string[], stdin: string | Uint8Array | undefined): Promise<RunResult> {
  const result = await runBinary(args, { stdin, env });
  expect(result.stdout).toBe("");
  expect(result.code).toBe(1);
  expect(result.stderr).toStartWith("paseo-host-runtime: ");
  expect(result.stderr.endsWith("\n")).toBe(true);
  expect(sandboxFiles()).toEqual(EMPTY_SANDBOX);
  return result;
}

describe("describe", () => {
  test("writes exactly the DescribeResponse line, nothing on stderr, exit 0", async () => {
    const result = await runBinary(["describe"]);
    expect(result).toEqual({ code: 0, signal: null, stdout: DESCRIBE, stderr: "" });
  });

  test("its line, fixed when the binary is built, is the schema's encoding of today's capabilities", async () => {
    expect((await runBinary(["describe"])).stdout).toBe(capabilitiesLine());
  });

  test.skipIf(NO_DEV_FULL)("a stdout that refuses the line (ENOSPC, /dev/full): one diagnostic on stderr, exit 1", () => {
    const full = openSync("/dev/full", "w");
    try {
      const run = Bun.spawnSync([BIN, "describe"], { stdin: "ignore", stdout: full, stderr: "pipe" });
      expect({ code: run.exitCode, stderr: run.stderr.toString() }).toEqual({ code: 1, stderr: "paseo-host-runtime: ENOSPC: no space left on device, write\n" });
    } finally {
      closeSync(full);
    }
  });

  test("ignores whatever is on stdin and touches no state", async () => {
    const result = await runBinary(["describe"], { stdin: "garbage that is not read\n", env });
    expect(result).toEqual({ code: 0, signal: null, stdout: DESCRIBE, stderr: "" });
    expect(sandboxFiles()).toEqual(EMPTY_SANDBOX);
  });
});

describe("help and version", () => {
  test("--version prints version, target and Bun version on stdout", async () => {
    const result = await runBinary(["--version"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/^paseo-host-runtime \S+ \((linux|darwin)-(x64|arm64), bun \d+\.\d+\.\d+\S*\)\n$/);
    expect(result.stdout).toStartWith(`paseo-host-runtime ${PACKAGE_VERSION} (`);
  });

  test.each([["--help"], ["-h"], ["help"]])("%s lists every protocol command on stdout", async (flag) => {
    const result = await runBinary([flag]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout).toContain("Usage: paseo-host-runtime <command> [options]");
    for (const command of ["describe", "create", "inspect", "exec", "signal", "pause", "resume", "destroy", "reconcile"]) {
      expect(result.stdout).toContain(`paseo-host-runtime ${command}`);
    }
  });

  test("create --help prints the help of create only, reading nothing", async () => {
    const result = await runBinary(["create", "--help"], { env });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout).toStartWith(
      "Usage: paseo-host-runtime create --workspace-id W < request.json\n\nCreate a workspace (idempotent).\nReads one LifecycleRequest (JSON) on stdin; refused when stdin is a terminal.\n\nOptions:\n      --workspace-id W  the workspace id the daemon addresses [required]\n",
    );
    expect(sandboxFiles()).toEqual(EMPTY_SANDBOX);
  });

  test("no arguments at all: the help goes to stderr, exit 2", async () => {
    const result = await runBinary([]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("Usage: paseo-host-runtime <command> [options]");
  });
});

describe("usage errors: exit 2, usage on stderr, nothing on stdout, nothing read or changed", () => {
  const cases: [string, string[], string][] = [
    ["unknown command", ["frobnicate"], 'unknown command "frobnicate"'],
    ["unknown command that looks like a flag", ["--frobnicate"], 'unknown command "--frobnicate"'],
    ["a name Object's prototype has", ["constructor"], 'unknown command "constructor"'],
    ["__proto__ as a command", ["__proto__", "--workspace-id", "w"], 'unknown command "__proto__"'],
    ["unknown flag", ["create", "--workspace-id", "w", "--root", "/"], "unknown option --root"],
    ["flag of another command", ["inspect", "--workspace-id", "w", "--exec-id", "e"], "unknown option --exec-id"],
    ["missing flag value", ["create", "--workspace-id"], "--workspace-id needs a value"],
    ["missing required flag", ["create"], "missing --workspace-id"],
    ["missing --signal", ["signal", "--workspace-id", "w", "--exec-id", "e"], "missing --signal"],
    ["duplicated flag", ["destroy", "--workspace-id", "a", "--workspace-id", "b"], "--workspace-id given more than once"],
    ["duplicated flag, = form", ["destroy", "--workspace-id=a", "--workspace-id=a"], "--workspace-id given more than once"],
    ["empty --workspace-id", ["create", "--workspace-id", ""], "--workspace-id must not be empty"],
    ["empty --workspace-id, = form", ["pause", "--workspace-id="], "--workspace-id must not be empty"],
    ["empty --exec-id", ["signal", "--workspace-id", "w", "--exec-id", "", "--signal", "SIGKILL"], "--exec-id must not be empty"],
    ["stray argument", ["create", "--workspace-id", "w", "extra"], 'unexpected argument "extra"'],
    ["stray argument to describe", ["describe", "now"], 'unexpected argument "now"'],
    ["stray argument to reconcile", ["reconcile", "w"], 'unexpected argument "w"'],
    ["single-dash flag (an operator's line: the operator command is named)", ["create", "-w", "x"], `unexpected argument "-w". create is an operation of the daemon's protocol, not a command for people; by hand: paseo-host-runtime new -w x --source DIR`],
    ["arguments after --", ["create", "--workspace-id", "w", "--", "sh"], "create takes no arguments after --"],
  ];

  test.each(cases)("%s", async (_, args, message) => {
    // A valid request on stdin: a usage error must win over it and change nothing.
    const result = await runBinary(args, { stdin: request(), env });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toStartWith(`paseo-host-runtime: ${message}\n`);
    expect(result.stderr).toContain("Usage: paseo-host-runtime ");
    expect(sandboxFiles()).toEqual(EMPTY_SANDBOX);
  });
});

describe("lifecycle input is refused before anything changes", () => {
  const operations: string[][] = [
    ["create", "--workspace-id", "w"],
    ["inspect", "--workspace-id", "w"],
    ["pause", "--workspace-id", "w"],
    ["resume", "--workspace-id", "w"],
    ["destroy", "--workspace-id", "w"],
    ["reconcile"],
    ["signal", "--workspace-id", "w", "--exec-id", "0123456789abcdef0123456789abcdef", "--signal", "SIGKILL"],
  ];

  test.each(operations.map((args) => [args.join(" "), args]))("%s with protocolVersion 2: stderr names 2 and 1", async (_, args) => {
    const stdin = `${JSON.stringify({ protocolVersion: 2, options: {}, workspaceIds: [] })}\n`;
    const result = await expectRefused(args as string[], stdin);
    expect(result.stderr).toBe("paseo-host-runtime: unsupported protocolVersion (a number other than 1) in lifecycle request: this runtime supports only protocolVersion 1\n");
  });

  test("create with a version 2 create input: the version is judged first", async () => {
    const stdin = `${JSON.stringify({
      protocolVersion: 2,
      input: { workspaceId: "w", project: { projectId: "p", source: { kind: "host-directory", path: sandbox.path } }, placement: { kind: "existing" }, v2: true },
      options: {},
    })}\n`;
    const result = await expectRefused(["create", "--workspace-id", "w"], stdin);
    expect(result.stderr).toContain("unsupported protocolVersion (a number other than 1)");
    expect(result.stderr).toContain("supports only protocolVersion 1");
  });

  test.each([
    ['"1"', `{"protocolVersion":"1","options":{}}`, "unsupported protocolVersion (a string)"],
    ["0", `{"protocolVersion":0,"options":{}}`, "unsupported protocolVersion (a number other than 1)"],
    ["missing", `{"options":{}}`, "missing protocolVersion"],
  ])("protocolVersion %s is refused too", async (_, stdin, message) => {
    const result = await expectRefused(["create", "--workspace-id", "w"], stdin);
    expect(result.stderr).toBe(`paseo-host-runtime: ${message} in lifecycle request: this runtime supports only protocolVersion 1\n`);
  });

  test.each([
    ["trailing garbage", `${request().trimEnd()} trailing`],
    ["two JSON values on one line", `${request().trimEnd()}${request()}`],
    ["two JSON values on two lines", `${request()}${request()}`],
    ["truncated JSON", request().slice(0, 20)],
    ["a JSON array", "[]\n"],
    ["a byte-order mark", `\uFEFF${request()}`],
  ])("%s", async (_, stdin) => {
    const result = await expectRefused(["inspect", "--workspace-id", "w"], stdin);
    expect(result.stderr).toStartWith("paseo-host-runtime: invalid lifecycle request: ");
  });

  test("invalid UTF-8 on stdin", async () => {
    const bytes = new TextEncoder().encode(`{"protocolVersion":1,"options":{"k":"xx"}}\n`);
    bytes[bytes.indexOf(0x78)] = 0xc3; // a lead byte followed by 'x': not UTF-8
    const result = await expectRefused(["inspect", "--workspace-id", "w"], bytes);
    expect(result.stderr).toBe("paseo-host-runtime: lifecycle request on stdin is not valid UTF-8\n");
  });

  test.each([
    ["closed at once", undefined],
    ["empty", ""],
    ["only whitespace", " \n\n"],
  ])("stdin %s", async (_, stdin) => {
    const result = await expectRefused(["create", "--workspace-id", "w"], stdin);
    expect(result.stderr).toBe("paseo-host-runtime: expected one lifecycle request JSON value on stdin, got nothing\n");
  });

  test("an unknown key deep in the request is refused with its path", async () => {
    const stdin = `${JSON.stringify({
      protocolVersion: 1,
      input: {
        workspaceId: "w",
        project: { projectId: "p", source: { kind: "host-directory", path: sandbox.path, root: "/" } },
        placement: { kind: "existing" },
      },
      options: {},
    })}\n`;
    const result = await expectRefused(["create", "--workspace-id", "w"], stdin);
    expect(result.stderr).toBe('paseo-host-runtime: invalid lifecycle request: input.project.source: unknown key "root"\n');
  });

  test("an unknown top-level key is refused", async () => {
    const result = await expectRefused(["destroy", "--workspace-id", "w"], `{"protocolVersion":1,"options":{},"unknownV1Field":1}\n`);
    expect(result.stderr).toBe('paseo-host-runtime: invalid lifecycle request: unknown key "unknownV1Field"\n');
  });
});
