/**
 * Refusals before launch, as the daemon lives them (issue 13):
 * - after any refusal the daemon runs `signal` for that exec id; it must answer "already clean"
 *   (exit 0), not "not ready", which every refusal used to turn into "cleanup failed"; an id
 *   never seen still fails "not ready";
 * - pipes mode: bytes that came in the envelope's own write refuse the exec before launch;
 * - `exec` run by hand without fds 3 and 4 is a usage error pointing at `run`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, request, runBinary } from "../../kit/binary.ts";
import { tempDir } from "../../kit/scratch.ts";
import { cgroupsUnder } from "../../kit/cgroup.ts";
import { envelope, newExecId, PATH } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import type { ReadyWorkspace } from "../../kit/workspace.ts";
import { ALL_MODES, cannotContain, MODES, workspaceIn } from "../support/containment.ts";
import { lifecycle, signalOp } from "../support/operation.ts";
import { executionRow } from "../support/store.ts";

const cleanups: (() => void)[] = [];
afterAll(() => cleanups.splice(0).forEach((cleanup) => cleanup()));

/** Runs one exec like the daemon and waits for its end. */
async function execOnce(workspaceId: string, env: Record<string, unknown>, withEnvelope?: string, keepControls = false): Promise<ExecResult> {
  const handle = startExec(workspaceId, env, { withEnvelope, keepControls });
  handle.closeStdin();
  const result = await handle.done;
  handle.closeControls();
  return result;
}

/** Execution cgroups left under the test's cgroup root (home/workspace/execution). */
function executionCgroups(ws: ReadyWorkspace): string[] {
  return ws.cgroupRoot ? cgroupsUnder(ws.cgroupRoot).filter((path) => path.split("/").length > 2) : [];
}

for (const mode of ALL_MODES) {
  describe.skipIf(cannotContain(mode, "exec/refusals.test.ts"))(`${mode}: a refused exec is already clean for the daemon's signal`, () => {
    let ws: ReadyWorkspace;
    let marker = "";
    let markers = 0;
    beforeAll(async () => {
      ws = await workspaceIn(mode, "refused");
      cleanups.push(ws.cleanup);
    });

    /** A workload that leaves a file of its own behind if it ever runs. */
    const touch = () => {
      marker = join(ws.root, `ran-${++markers}`);
      return ["/bin/sh", "-c", `touch ${marker}`];
    };
    const refusals: [string, () => { argv: string[]; fields?: Record<string, unknown>; withEnvelope?: string; code: number; stderr: string; events: string[] }][] = [
      ["a cwd outside the workspace", () => ({ argv: touch(), fields: { cwd: "../.." }, code: 1, stderr: "cwd must stay inside the workspace", events: [] })],
      ["a program that does not exist", () => ({ argv: ["no-such-program-anywhere"], code: 127, stderr: "not found", events: [] })],
      [
        "an extra fd 3 frame in the envelope's write (pipes)",
        () => ({ argv: touch(), withEnvelope: '{"type":"signal","protocolVersion":1,"signal":"SIGTERM"}\n', code: 1, stderr: "unexpected signal frame on fd 3 in pipes mode; nothing was launched", events: ["error"] }),
      ],
      [
        "bytes without a newline after the envelope, in the same write (pipes)",
        () => ({ argv: touch(), withEnvelope: '{"type":"resi', code: 1, stderr: "unexpected bytes after the spawn envelope on fd 3 in pipes mode; nothing was launched", events: ["error"] }),
      ],
      ["an invalid frame after the envelope, in the same write (pipes)", () => ({ argv: touch(), withEnvelope: "{}\n", code: 1, stderr: "fd 3 control frame 2", events: ["error"] })],
      [
        "a PTY signal frame with no signal name, in the envelope's write",
        () => ({ argv: touch(), fields: { stdio: { kind: "pty", rows: 24, cols: 80 } }, withEnvelope: '{"type":"signal","protocolVersion":1,"signal":"SIGRTMIN"}\n', code: 1, stderr: "signal: not a signal name (give one such as SIGTERM or SIGKILL, not a number)", events: ["error"] }),
      ],
    ];

    for (const [what, make] of refusals) {
      test(`${what}: nothing launched, then signal exits 0`, async () => {
        const { argv, fields, withEnvelope, code, stderr, events } = make();
        const env = envelope(argv, { options: ws.options, env: { PATH }, ...fields });
        const result = await execOnce(ws.id, env, withEnvelope);
        expect(result.code).toBe(code);
        expect(result.stderr).toContain(stderr);
        expect(result.events.map((event) => event.type)).toEqual(events as never);
        expect(marker === "" || !existsSync(marker)).toBe(true);
        marker = "";
        expect(executionCgroups(ws)).toEqual([]);
        expect(executionRow(ws.home, env.execId as string)).toMatchObject({ pid: 0, finished_at: expect.any(Number) });
        const signalled = await signalOp(ws, env.execId as string);
        expect(signalled.stderr).toBe("");
        expect(signalled.code).toBe(0);
      });
    }

    test("a paused workspace: refused, then signal exits 0", async () => {
      expect((await lifecycle(ws, "pause")).code).toBe(0);
      try {
        const env = envelope(touch(), { options: ws.options, env: { PATH } });
        const result = await execOnce(ws.id, env);
        expect(result.code).toBe(1);
        expect(result.stderr).toContain("is paused");
        const signalled = await signalOp(ws, env.execId as string);
        expect(signalled.stderr).toBe("");
        expect(signalled.code).toBe(0);
      } finally {
        expect((await lifecycle(ws, "resume")).code).toBe(0);
      }
    });

    test("an id never seen still fails \"not ready\"", async () => {
      const signalled = await signalOp(ws, newExecId());
      expect(signalled.code).toBe(1);
      expect(signalled.stderr).toContain("is not ready (never started)");
    });

    test("another owner's exec into this workspace is refused and records nothing here", async () => {
      const env = envelope(touch(), { options: { ...ws.options, owner: "someone-else" }, env: { PATH } });
      const result = await execOnce(ws.id, env);
      expect(result.code).toBe(1);
      expect(executionRow(ws.home, env.execId as string)).toBeNull();
    });

    test("a reused exec id is refused and its first record is left as it was", async () => {
      const env = envelope(["true"], { options: ws.options, env: { PATH } });
      expect((await execOnce(ws.id, env)).code).toBe(0);
      const first = executionRow(ws.home, env.execId as string);
      const again = await execOnce(ws.id, env);
      expect(again.stderr).toContain("never reused");
      expect(executionRow(ws.home, env.execId as string)).toEqual(first);
    });
  });
}

describe("a workspace that does not exist", () => {
  let ws: ReadyWorkspace;
  beforeAll(async () => {
    ws = await workspaceIn(MODES[0]!, "nows");
    cleanups.push(ws.cleanup);
  });

  test("exec is refused, signal exits 0, and destroy (or reconcile) forgets the record", async () => {
    const missing = `missing-${process.pid}`;
    for (const forget of ["destroy", "reconcile"] as const) {
      const env = envelope(["true"], { options: ws.options, env: { PATH } });
      const result = await execOnce(missing, env);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`workspace "${missing}" does not exist`);
      const signal = ["signal", "--workspace-id", missing, "--exec-id", env.execId as string, "--signal", "SIGKILL"];
      const signalled = await runBinary(signal, { stdin: request(ws.options) });
      expect(signalled.stderr).toBe("");
      expect(signalled.code).toBe(0);
      const forgotten = forget === "destroy" ? await runBinary(["destroy", "--workspace-id", missing], { stdin: request(ws.options) }) : await runBinary(["reconcile"], { stdin: request(ws.options, { workspaceIds: [ws.id] }) });
      expect(forgotten.code).toBe(0);
      const again = await runBinary(signal, { stdin: request(ws.options) });
      expect(again.stderr).toContain("is not ready");
    }
  });
});

describe("exec run by hand", () => {
  const RUN_BY_HAND = "exec needs the spawn envelope on fd 3 and an event channel on fd 4; to run a command by hand use `paseo-host-runtime run`";

  test("with only fds 0, 1 and 2 it is a usage error (exit 2) naming run; nothing is read", async () => {
    const result = await runBinary(["exec", "--workspace-id", "w"], { stdin: "not an envelope\n" });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(RUN_BY_HAND);
    expect(result.stderr).toContain("(fd 3 is anon_inode:");
    expect(result.stderr).not.toContain("ESPIPE");
  });

  test("through --remote too", async () => {
    const result = await runBinary(["--remote", "ssh://nobody@127.0.0.1:1", "exec", "--workspace-id", "w"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(RUN_BY_HAND);
  });

  test("with fd 3 a character device (/dev/null) it is the same usage error", async () => {
    const proc = Bun.spawnSync(["sh", "-c", `exec "$0" exec --workspace-id w 3</dev/null 4>&1`, BIN], { stderr: "pipe", stdout: "pipe" });
    expect(proc.exitCode).toBe(2);
    expect(proc.stderr.toString()).toContain(`${RUN_BY_HAND} (fd 3 is a character device)`);
  });

  test("the documented way by hand still works: the envelope in a file on fd 3, events on fd 4", async () => {
    const ws = await workspaceIn(MODES[0]!, "byhand");
    cleanups.push(ws.cleanup);
    const scratch = tempDir("phr-byhand-");
    cleanups.push(scratch.cleanup);
    const file = join(scratch.path, "envelope.json");
    writeFileSync(file, `${JSON.stringify(envelope(["/bin/echo", "hi"], { options: ws.options }))}\n`);
    const proc = Bun.spawnSync(["sh", "-c", `exec "$0" exec --workspace-id "$1" 3<"$2" 4>&1`, BIN, ws.id, file], { stdout: "pipe", stderr: "pipe" });
    expect(proc.stderr.toString()).toBe("");
    expect(proc.exitCode).toBe(0);
    // The workload's stdout and fd 4 are one pipe here: its line may come before or after `started`.
    const lines = proc.stdout.toString().split("\n");
    expect(lines.filter((line) => line !== "hi")).toEqual(['{"type":"started","protocolVersion":1}', '{"type":"eof","protocolVersion":1}', '{"type":"exit","protocolVersion":1,"code":0,"signal":null}', ""]);
    expect(lines.filter((line) => line === "hi")).toEqual(["hi"]);
  });
});
