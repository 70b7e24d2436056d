/**
 * What people read cannot be steered by what others chose: a workspace id or exec id with a
 * newline, ESC, OSC, BEL or a C1 control (the daemon's create accepts any string) is shown
 * escaped in every human-readable output, `logs`, `ls`, `ps`, `doctor` and diagnostics, so it
 * can neither forge a line (`… INFO destroy prod pid 1: ok`) nor reach the terminal raw.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { request } from "../../kit/binary.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec, type ExecHandle } from "../support/daemon.ts";
import { destroyed } from "../support/operation.ts";
import { runIn, sandbox, type Sandbox } from "../support/operator.ts";

/** A forged log line after a newline, a title change (OSC … BEL), a screen clear (ESC [2J) and a C1 CSI. */
const FORGED = "2026-12-01 11:20:45.661 INFO  destroy prod pid 1: ok";
const HOSTILE = `w\n${FORGED}\u001b]0;owned\u0007\u001b[2J\u009b31m\u202edorp\u2028`;
const HOSTILE_EXEC = `e\n${FORGED}\u001b[2J`;
/** Control and bidi characters no human output may carry (newline is the line separator). */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2028\u2029]/;

let box: Sandbox;
let options: Record<string, unknown>;
let exec: ExecHandle;

beforeAll(async () => {
  box = sandbox();
  options = { stateDirectory: box.home, ...(box.cgroupRoot ? { cgroupRoot: box.cgroupRoot } : {}) };
  const dir = join(box.dir, "project");
  mkdirSync(dir);
  const input = { workspaceId: HOSTILE, project: { projectId: "p", source: { kind: "host-directory", path: dir } }, placement: { kind: "existing" } };
  const created = await runIn(box, ["create", "--workspace-id", HOSTILE], { stdin: request(options, { input }) });
  if (created.code !== 0) throw new Error(`create failed: ${created.stderr}`);
  exec = startExec(HOSTILE, envelope(["sleep", "30"], { options, env: { PATH }, execId: HOSTILE_EXEC }), { env: { ...(process.env as Record<string, string>), ...box.env } });
  await exec.waitEvent("started");
});

afterAll(async () => {
  process.kill(exec.pid, "SIGTERM");
  await exec.done;
  try {
    await destroyed(HOSTILE, options);
  } finally {
    box.cleanup();
  }
});

/** No raw control character, no line that is the forged one, and the id shown escaped. */
function expectEscaped(text: string): void {
  expect(text).not.toMatch(RAW_CONTROL);
  for (const line of text.split("\n")) expect(line.startsWith(FORGED)).toBe(false);
  expect(text).toContain("\\x0a");
}

describe("every human-readable output escapes control characters in every field", () => {
  test("logs: the create, exec and started lines", async () => {
    const result = await runIn(box, ["logs", "--home", box.home]);
    expect(result.code).toBe(0);
    expectEscaped(result.stdout);
    expect(result.stdout).toContain(`create w\\x0a${FORGED}\\x1b]0;owned\\x07\\x1b[2J\\u009b31m\\u202edorp\\u2028 pid `);
  });

  test("logs --json: DEL and C1 controls as \\u escapes, the same JSON values", async () => {
    const result = await runIn(box, ["logs", "--home", box.home, "--json"]);
    expect(result.stdout).not.toMatch(RAW_CONTROL);
    const ids = result.stdout.trimEnd().split("\n").map((line) => JSON.parse(line).workspaceId);
    expect(ids).toContain(HOSTILE);
  });

  test("ls", async () => {
    const result = await runIn(box, ["ls", "--home", box.home]);
    expect(result.code).toBe(0);
    expectEscaped(result.stdout);
    expect(result.stdout.trimEnd().split("\n")).toHaveLength(2);
  });

  test("ps: the table, -q and a --format template", async () => {
    for (const args of [[], ["-q"], ["--format", "{{.workspaceId}} {{.execId}}"]]) {
      const result = await runIn(box, ["ps", "--home", box.home, ...args]);
      expect(result.code).toBe(0);
      expectEscaped(result.stdout);
    }
  });

  test("doctor: a home path with control characters", async () => {
    const home = join(box.dir, "home\u001b]0;owned\u0007\ndoctor");
    const result = await runIn(box, ["doctor", "--home", home, "--owner", HOSTILE]);
    expect(result.stdout).not.toMatch(RAW_CONTROL);
    expect(result.stdout).toContain("home\\x1b]0;owned\\x07\\x0adoctor");
  });

  test("diagnostics on stderr: one line each, the id escaped", async () => {
    const missing = join(box.dir, `nowhere\n${FORGED}\u001b[2J`);
    const result = await runIn(box, ["ls", "--home", missing]);
    expect(result.code).toBe(1);
    expect(result.stderr).not.toMatch(RAW_CONTROL);
    expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain(`nowhere\\x0a${FORGED}\\x1b[2J does not exist`);
  });
});
