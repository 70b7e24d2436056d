/**
 * The launch gate (process-group containment): the workload runs only once its pid is on
 * record, and it gets exactly what a direct spawn gives — argv (argv[0] included), env (keys
 * such as __proto__ and names a shell would drop), default signal dispositions, an empty mask,
 * fds 0-2 only, its own session, the workspace cwd — in pipes and PTY mode. Each fidelity check
 * also runs under cgroup containment (a direct spawn) so both are held to the same bytes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, closeSync, existsSync, mkdirSync, readSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GATE_ENV, gateArgv } from "../../src/containment/gate.ts";
import { makePipe } from "../../src/platform/libc/descriptors.ts";
import { BIN } from "../../kit/binary.ts";
import { envelope, PATH } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import type { ReadyWorkspace } from "../../kit/workspace.ts";
import { ALL_MODES, cannotContain, MODES, workspaceIn, type Mode } from "../support/containment.ts";
import { linuxOnly } from "../support/platform.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc/self). */
const PROC = linuxOnly("containment/gate.test.ts, argv and signal dispositions read from /proc", "/proc/self");

const spaces = new Map<Mode, ReadyWorkspace>();
beforeAll(async () => {
  for (const mode of MODES) spaces.set(mode, await workspaceIn(mode, "gate"));
});
afterAll(() => spaces.forEach((ws) => ws.cleanup()));

function run(mode: Mode, argv: string[], fields: Record<string, unknown> = {}): Promise<ExecResult> {
  const ws = spaces.get(mode)!;
  const handle = startExec(ws.id, envelope(argv, { options: ws.options, env: { PATH }, ...fields }));
  handle.closeStdin();
  return handle.done;
}

function expectComplete(result: ExecResult, code: number | null, signal: string | null = null): void {
  expect(result.violation, `${JSON.stringify(result.events)} ${result.stderr}`).toBeNull();
  expect(result.events.map((e) => e.type)).toEqual(["started", "eof", "exit"]);
  expect(result.events[2]).toEqual({ type: "exit", protocolVersion: 1, code, signal });
}

for (const mode of ALL_MODES) {
  describe.skipIf(cannotContain(mode, "containment/gate.test.ts"))(`${mode}: the workload gets exactly what the envelope says`, () => {
    test("env: every key exactly, __proto__ and names no shell would keep included", async () => {
      const env = JSON.parse('{"__proto__":"p","constructor":"c","in-valid":"x","1X":"y","A":"a=b","EMPTY":""}');
      const result = await run(mode, ["/usr/bin/env"], { env });
      expectComplete(result, 0);
      expect(result.stdout.toString().split("\n").filter(Boolean).sort()).toEqual(["1X=y", "A=a=b", "EMPTY=", "__proto__=p", "constructor=c", "in-valid=x"]);
    });

    test.skipIf(PROC)("argv: argv[0] as given (a bare name), every argument byte for byte", async () => {
      // The shell prints its own command line, as the kernel holds it.
      const result = await run(mode, ["sh", "-c", "cat /proc/$$/cmdline", "a b", "", "ü"]);
      expectComplete(result, 0);
      expect(result.stdout.toString("latin1")).toBe(Buffer.from("sh\0-c\0cat /proc/$$/cmdline\0a b\0\0ü\0").toString("latin1"));
    });

    test.skipIf(PROC)("default signal dispositions, an empty mask, fds 0-2 only, its own session", async () => {
      const status = await run(mode, ["grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"]);
      expectComplete(status, 0);
      expect(status.stdout.toString()).toBe("SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
      const fds = await run(mode, ["ls", "/proc/self/fd"]);
      expectComplete(fds, 0);
      // ls opens the directory it lists as fd 3 itself.
      expect(fds.stdout.toString().split("\n").filter(Boolean)).toEqual(["0", "1", "2", "3"]);
      const stat = await run(mode, ["cat", "/proc/self/stat"]);
      const text = stat.stdout.toString();
      const [pid] = text.split(" ");
      const after = text.slice(text.lastIndexOf(")") + 2).split(" ");
      expect([after[2], after[3]]).toEqual([pid, pid]);
    });

    test("SIGTERM to the wrapper once the workload has run a while ends it by SIGTERM", async () => {
      const ws = spaces.get(mode)!;
      const handle = startExec(ws.id, envelope(["sleep", "30"], { options: ws.options, env: { PATH } }));
      await handle.waitEvent("started");
      // Well after started, with the wrapper idle in its event loop; not a timing assertion.
      await Bun.sleep(150);
      process.kill(handle.pid, "SIGTERM");
      const result = await handle.done;
      expectComplete(result, null, "SIGTERM");
      expect(result.signal).toBe("SIGTERM");
    });

    test("an executable without #! (ENOEXEC) fails before started with exit 126, nothing launched", async () => {
      const ws = spaces.get(mode)!;
      writeFileSync(join(ws.root, "no-shebang"), "echo should-not-run\n");
      chmodSync(join(ws.root, "no-shebang"), 0o755);
      const result = await run(mode, ["./no-shebang"]);
      expect(result.events).toEqual([]);
      expect(result.code).toBe(126);
      expect(result.stderr).toContain("cannot launch");
      expect(result.stdout.toString()).toBe("");
    });

    test("a workspace's bunfig.toml preload and .env are never loaded", async () => {
      const ws = spaces.get(mode)!;
      const marker = join(ws.root, "preloaded");
      writeFileSync(join(ws.root, "evil.js"), `require("fs").writeFileSync(${JSON.stringify(marker)}, "ran")\n`);
      writeFileSync(join(ws.root, "bunfig.toml"), 'preload = ["./evil.js"]\n');
      writeFileSync(join(ws.root, ".env"), "FROM_DOTENV=1\n");
      const result = await run(mode, ["/usr/bin/env"], { env: { ONLY: "this" } });
      expectComplete(result, 0);
      expect(result.stdout.toString()).toBe("ONLY=this\n");
      expect(existsSync(marker)).toBe(false);
    });

    test("PTY: a terminal of the envelope's size, exit code mirrored, a SIGTERM frame delivered", async () => {
      const ws = spaces.get(mode)!;
      const env = envelope(["/bin/sh", "-c", 'stty size; [ -t 0 ] && echo tty; read line; exit 9'], { options: ws.options, env: { PATH }, stdio: { kind: "pty", rows: 30, cols: 90 } });
      const handle = startExec(ws.id, env, { keepControls: true });
      await handle.waitStdout("tty");
      handle.write("x\n");
      const result = await handle.done.finally(() => handle.closeControls());
      expect(result.events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: 9, signal: null });
      expect(result.stdout.toString()).toContain("30 90");
      const stopped = startExec(ws.id, envelope(["sleep", "30"], { options: ws.options, env: { PATH }, stdio: { kind: "pty", rows: 24, cols: 80 } }), { keepControls: true });
      await stopped.waitEvent("started");
      stopped.sendControl('{"type":"signal","protocolVersion":1,"signal":"SIGTERM"}\n');
      const ended = await stopped.done.finally(() => stopped.closeControls());
      expect(ended.events.at(-1)).toEqual({ type: "exit", protocolVersion: 1, code: null, signal: "SIGTERM" });
    });
  });
}

describe("the gate itself", () => {
  /** Starts the gate the way src/containment/gate.ts does (the compiled binary as its engine); returns its fds. */
  function gate(cwd: string) {
    const [specRead, specWrite] = makePipe();
    const [statusRead, statusWrite] = makePipe();
    const argv = gateArgv();
    argv[0] = BIN;
    const proc = Bun.spawn(argv, { cwd, env: GATE_ENV, stdio: ["ignore", "pipe", "pipe", specRead, statusWrite], detached: true });
    // The wrapper keeps only its own ends.
    closeSync(specRead);
    closeSync(statusWrite);
    return { proc, specWrite, statusRead };
  }

  const dir = join(tmpdir(), `phr-gate-${process.pid}`);
  beforeAll(() => mkdirSync(dir, { recursive: true }));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("its wrapper gone before the spec was complete, it exits 125 and runs nothing", async () => {
    for (const partial of ["", '{"program":"/bin/touch","argv":["touch","ran"],"env":{}}']) {
      const g = gate(dir);
      // No newline: the spec is not complete when its writer goes away.
      if (partial) writeSync(g.specWrite, partial);
      closeSync(g.specWrite);
      expect(await g.proc.exited).toBe(125);
      closeSync(g.statusRead);
      expect(existsSync(join(dir, "ran"))).toBe(false);
    }
  });

  test("once told, it becomes the program in place: same pid, status pipe closed by execve", async () => {
    const g = gate(dir);
    writeSync(g.specWrite, `${JSON.stringify({ program: "/bin/sh", argv: ["sh", "-c", "echo $$"], env: {} })}\n`);
    closeSync(g.specWrite);
    const out = await new Response(g.proc.stdout as ReadableStream).text();
    expect(await g.proc.exited).toBe(0);
    expect(Number(out.trim())).toBe(g.proc.pid);
    expect(readSync(g.statusRead, Buffer.alloc(16))).toBe(0);
    closeSync(g.statusRead);
  });
});
