/**
 * What the remote binary answers as JSON (describe, reconcile, `ps --json`, `doctor --json`) is
 * our own protocol output, decoded strictly: invalid UTF-8 there is refused with a diagnostic
 * that says so, never turned into U+FFFD and read on. The remote program here answers those
 * with one byte 0xFF inside a JSON string, and runs the real binary for everything else. The
 * same holds the other way: exec-remote decodes the local side's spawn envelope strictly.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MuxDecoder, MuxType, encodeMux } from "../../src/remote/mux.ts";
import { parseSshUrl } from "../../src/ssh-url.ts";
import { BIN, runBinary } from "../../kit/binary.ts";
import { envelope } from "../../kit/envelope.ts";
import { tempDir, type Scratch } from "../../kit/scratch.ts";
import { startSshd, type SshLab } from "../../kit/sshd.ts";
import { createInput, remoteOp } from "../support/operation.ts";
import { makeRepo } from "../support/git.ts";
import { linuxOnly } from "../support/platform.ts";
import { withoutSsh } from "../support/tools.ts";

/** Set where the tests marked with it cannot run: they need Linux (the tests' own sshd on 127.0.0.1 and /proc). */
const NO_SSHD = linuxOnly("remote/own-output.test.ts", "the tests' own sshd on 127.0.0.1 and /proc") || withoutSsh("remote/own-output.test.ts");

setDefaultTimeout(60_000);

let scratch: Scratch;
let a: SshLab;
let b: SshLab;
let repo: string;

/** A remote program whose JSON answers carry an invalid UTF-8 byte (octal 377 = 0xFF). */
function invalidUtf8Binary(dir: string): string {
  const path = join(dir, "bad-utf8-runtime");
  const answers = {
    describe: String.raw`{"protocolVersion":1,"modes":["pipes\377"],"reconcile":true}`,
    reconcile: String.raw`{"type":"ok\377","protocolVersion":1}`,
    ps: String.raw`{"home":"/h","executions":["\377"]}`,
    doctor: String.raw`{"ok":true,"checks":[{"name":"x\377","status":"ok","detail":"d"}]}`,
  };
  const cases = Object.entries(answers).map(([word, json]) => `  ${word}) cat >/dev/null; printf '${json}\\n'; exit 0;;`);
  writeFileSync(path, ["#!/bin/sh", 'case "$1" in', ...cases, "esac", `exec ${BIN} "$@"`, ""].join("\n"));
  chmodSync(path, 0o755);
  return path;
}

// Without sshd every block below is skipped, and there is nothing to start or stop.
if (!NO_SSHD) {
  beforeAll(async () => {
    scratch = tempDir("phr-remote-own-output-");
    const binary = invalidUtf8Binary(scratch.path);
    a = await startSshd(binary);
    b = await startSshd(binary, a);
    repo = makeRepo(join(scratch.path, "repo"));
  });

  afterAll(async () => {
    await b.stop();
    await a.stop();
    scratch.cleanup();
  });
}

describe.skipIf(NO_SSHD)("a remote answer that is not valid UTF-8 is refused", () => {
  test("describe", async () => {
    const result = await runBinary([...a.prefix, "describe"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`invalid describe response of ${parseSshUrl(a.url).key}: not valid UTF-8`);
  });

  test("reconcile", async () => {
    const result = await remoteOp(a, "reconcile", null, { options: { stateDirectory: a.localHome }, workspaceIds: [] });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`invalid reconcile response of ${parseSshUrl(a.url).key}: not valid UTF-8`);
  });

  test("ps --json for least-loaded placement: the host is left out, and with none left the create fails", async () => {
    const id = `own-output-${process.pid}`;
    const input = createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `agent-${id}`, baseRef: "main" });
    const result = await remoteOp(a, "create", id, { input, options: { stateDirectory: a.localHome, remote: { hosts: [b.url], placement: "least-loaded" } } });
    for (const lab of [a, b]) expect(result.stderr).toContain(`least-loaded placement: leaving out ${parseSshUrl(lab.url).key}: invalid ps --json: not valid UTF-8`);
    expect(result.stderr).toContain("no remote host answered for least-loaded placement");
    expect(result.code).toBe(1);
  });

  test("remote doctor: the remote report fails, naming why", async () => {
    const result = await runBinary(["remote", "doctor", a.url, "--ssh-config", a.configFile, "--json"]);
    const checks = JSON.parse(result.stdout).checks as { name: string; status: string; detail: string }[];
    expect(checks.find((check) => check.name === "remote doctor")).toEqual({
      name: "remote doctor",
      status: "fail",
      detail: `invalid doctor --json report of ${parseSshUrl(a.url).key}: not valid UTF-8`,
    });
    expect(checks.some((check) => check.name.startsWith("remote x"))).toBe(false);
    expect(result.code).toBe(1);
  });
});

describe.skipIf(NO_SSHD)("exec-remote", () => {
  test("an OPEN frame whose spawn envelope is not valid UTF-8 is refused with an ERROR frame", async () => {
    const home = tempDir("phr-remote-own-output-home-");
    try {
      const [head, tail] = JSON.stringify(envelope(["/bin/true"], { env: { X: "@" } })).split("@");
      const open = encodeMux(MuxType.OPEN, 0, Buffer.concat([Buffer.from(head!), Buffer.from([0xff]), Buffer.from(`${tail}\n`)]));
      const proc = Bun.spawn([BIN, "exec-remote", "--workspace-id", "own-output"], {
        env: { ...process.env, PASEO_HOST_RUNTIME_HOME: home.path },
        stdin: new Blob([open]),
        stdout: "pipe",
        stderr: "pipe",
      });
      const stdout = new Uint8Array(await new Response(proc.stdout).arrayBuffer());
      expect(await proc.exited).toBe(0);
      const frames = new MuxDecoder("toLocal").push(stdout);
      expect(frames.map((frame) => frame.type)).toEqual([MuxType.HELLO, MuxType.ERROR]);
      expect(new TextDecoder().decode(frames[1]!.payload)).toBe("invalid remote spawn envelope: not valid UTF-8");
    } finally {
      home.cleanup();
    }
  });
});
