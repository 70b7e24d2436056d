import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { ISOLATIONS, cannotIsolate } from "../support/containment.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { until } from "../support/poll.ts";
import { descendants, processesWith } from "../support/procs.ts";
import { linuxOnly } from "../support/platform.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc). */
const PROC = linuxOnly("exec/pipes.test.ts, the workload's session, signal mask, fds and leftovers read from /proc", "/proc");

/** Race loops: modest by default, larger with PASEO_STRESS=1. */
const EARLY_TRIALS = process.env.PASEO_STRESS === "1" ? 200 : 10;
for (const isolation of ISOLATIONS) {
  describe.skipIf(cannotIsolate(isolation, "exec/pipes.test.ts"))(`isolation ${JSON.stringify(isolation)}`, () => {
    let ws: ReadyWorkspace;

    beforeAll(async () => {
      ws = await readyWorkspace("pipes", "seed", { isolation });
    });
    afterAll(() => ws.cleanup());

    function run(argv: string[], fields: Record<string, unknown> = {}, stdin?: Uint8Array | string): Promise<ExecResult> {
      const handle = startExec(ws.id, envelope(argv, { options: ws.options, env: { PATH }, ...fields }));
      if (stdin !== undefined) handle.write(stdin);
      handle.closeStdin();
      return handle.done;
    }

    function expectComplete(result: ExecResult, code: number | null, signal: string | null = null): void {
      expect(result.violation).toBeNull();
      expect(result.events.map((e) => e.type)).toEqual(["started", "eof", "exit"]);
      expect(result.events[2]).toEqual({ type: "exit", protocolVersion: 1, code, signal });
      expect(result.code).toBe(code);
      expect(result.signal).toBe(signal);
    }

    function randomBytes(size: number): Uint8Array {
      const bytes = new Uint8Array(size);
      for (let i = 0; i < size; i += 65536) crypto.getRandomValues(bytes.subarray(i, Math.min(size, i + 65536)));
      bytes.set([0, 0xff, 0x0a, 0], 0);
      return bytes;
    }

    describe("the workload owns fd 0, 1 and 2", () => {
      test("stdin reaches stdout byte for byte (8 MiB with NUL and 0xff), and stdin EOF ends cat", async () => {
        const data = randomBytes(8 * 1024 * 1024 + 3);
        const result = await run(["cat"], {}, data);
        expectComplete(result, 0);
        expect(result.stdout.equals(Buffer.from(data))).toBe(true);
      });

      test("stdin reaches stderr byte for byte", async () => {
        const data = randomBytes(1024 * 1024);
        const result = await run(["sh", "-c", "cat >&2"], {}, data);
        expectComplete(result, 0);
        expect(Buffer.from(result.stderr, "latin1").length).toBeGreaterThan(0);
        expect(result.stdout.length).toBe(0);
      });

      test("stderr bytes are exact too", async () => {
        const data = randomBytes(2 * 1024 * 1024);
        const handle = startExec(ws.id, envelope(["sh", "-c", "cat >&2"], { options: ws.options, env: { PATH } }));
        const chunks: Buffer[] = [];
        handle.child.stderr!.on("data", (chunk: Buffer) => chunks.push(chunk));
        handle.write(data);
        handle.closeStdin();
        expectComplete(await handle.done, 0);
        expect(Buffer.concat(chunks).equals(Buffer.from(data))).toBe(true);
      });

      test("the wrapper (nor, sandboxed, any process of the sandbox) keeps no copy of stdout or stderr: the daemon sees EOF as soon as the workload closes them", async () => {
        const handle = startExec(ws.id, envelope(["sh", "-c", "exec 1>&- 2>&-; sleep 30"], { options: ws.options, env: { PATH } }));
        const ended = (stream: NodeJS.ReadableStream) => new Promise<boolean>((resolve) => stream.on("end", () => resolve(true)));
        const closed = Promise.all([ended(handle.child.stdout!), ended(handle.child.stderr!)]);
        handle.closeStdin();
        await handle.waitEvent("started");
        // The workload still sleeps: EOF on both can only come from it closing them.
        expect(await Promise.race([closed.then(() => true), Bun.sleep(10_000).then(() => false)])).toBe(true);
        expect(handle.events.map((e) => e.type)).toEqual(["started"]);
        process.kill(handle.pid, "SIGTERM");
        expectComplete(await handle.done, null, "SIGTERM");
      });

      for (const code of [0, 1, 2, 42, 126, 127, 255]) {
        test(`exit code ${code} is reported and mirrored`, async () => {
          expectComplete(await run(["sh", "-c", `exit ${code}`]), code);
        });
      }
    });

    describe("the workload sees exactly what the envelope gives", () => {
      test("/usr/bin/env with {X: y} prints exactly X=y", async () => {
        const result = await run(["/usr/bin/env"], { env: { X: "y" } });
        expectComplete(result, 0);
        expect(result.stdout.toString()).toBe("X=y\n");
      });

      test("a bare argv[0] is resolved through the envelope PATH only", async () => {
        const result = await run(["env"], { env: {} });
        expect(result.code).toBe(127);
        expect(result.stderr).toContain('program "env" not found');
        expect(result.events).toEqual([]);
      });

      // Each probe is the workload itself (no shell in between: a shell's forks briefly hold
      // pipes and block signals, which would say nothing about what the wrapper handed over).
      test.skipIf(PROC)("the workload leads its own session and group", async () => {
        const result = await run(["cat", "/proc/self/stat"]);
        expectComplete(result, 0);
        const stat = result.stdout.toString();
        const after = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        const pid = Number(stat.split(" ")[0]);
        expect(Number(after[2])).toBe(pid); // pgid
        expect(Number(after[3])).toBe(pid); // sid
      });

      test.skipIf(PROC)("the workload starts with default signal dispositions and an empty mask (SIGPIPE not ignored)", async () => {
        const result = await run(["grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"]);
        expectComplete(result, 0);
        expect(result.stdout.toString()).toBe("SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
      });

      test.skipIf(PROC)("the workload sees no fd 3 or 4", async () => {
        const result = await run(["ls", "-l", "/proc/self/fd/"]);
        expectComplete(result, 0);
        // ls opens /proc/self/fd itself (one directory fd); nothing else beyond 0-2 may be there.
        const targets = result.stdout.toString().split("\n").filter((line) => / \d+ -> /.test(line));
        const extra = targets.filter((line) => !/ [012] -> /.test(line) && !line.endsWith("/fd"));
        expect(extra).toEqual([]);
      });

      test.skipIf(PROC)("the workload's own descriptors are only 0, 1 and 2", async () => {
        // `ls` opens its directory as fd 3 itself, so look from outside instead.
        const handle = startExec(ws.id, envelope(["sleep", "5"], { options: ws.options, env: { PATH } }));
        await handle.waitEvent("started");
        // This exec's sleep: the wrapper is among its ancestors (under the sandbox, bwrap and the init stand between).
        const below = descendants(handle.pid);
        const pid = processesWith("sleep\u00005").find((p) => below.includes(p))!;
        expect(readdirSync(`/proc/${pid}/fd`).sort()).toEqual(["0", "1", "2"]);
        process.kill(handle.pid, "SIGTERM");
        expectComplete(await handle.done, null, "SIGTERM");
      });

      test.skipIf(PROC)("a secret in env appears in no process command line", async () => {
        const secret = `secret-${crypto.randomUUID()}`;
        const handle = startExec(ws.id, envelope(["sleep", "5"], { options: ws.options, env: { PATH, TOKEN: secret } }));
        await handle.waitEvent("started");
        expect(processesWith(secret)).toEqual([]);
        process.kill(handle.pid, "SIGTERM");
        await handle.done;
      });

      test("cwd runs the workload in that workspace directory", async () => {
        mkdirSync(join(ws.root, "packages/app"), { recursive: true });
        const result = await run(["pwd"], { cwd: "packages/app" });
        expectComplete(result, 0);
        expect(result.stdout.toString()).toBe(`${join(ws.root, "packages/app")}\n`);
      });
    });

    describe("a cwd outside the workspace, or through any symlink, launches nothing", () => {
      const cases: [string, string][] = [
        ["an absolute path", "/tmp"],
        ["a .. escape", "../outside"],
        ["a symlink pointing outside", "link-out"],
        ["a symlink that stays inside", "link-in"],
        ["a path through a symlink that stays inside", "link-in/deeper"],
        ["a NUL byte", "a\u0000b"],
        ["a missing directory", "does/not/exist"],
      ];
      for (const [what, cwd] of cases) {
        test(`${what} is refused before started`, async () => {
          if (!existsSync(join(ws.root, "link-out"))) symlinkSync("/tmp", join(ws.root, "link-out"));
          if (!existsSync(join(ws.root, "link-in"))) {
            mkdirSync(join(ws.root, "real/deeper"), { recursive: true });
            symlinkSync("real", join(ws.root, "link-in"));
          }
          const marker = join(ws.root, `launched-${crypto.randomUUID()}`);
          const result = await run(["touch", marker], { cwd });
          expect(result.code).toBe(1);
          expect(result.events).toEqual([]);
          expect(result.stderr).toContain("cwd");
          expect(existsSync(marker)).toBe(false);
        });
      }
    });

    describe("signals sent to the wrapper reach the workload's process group", () => {
      for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
        test(`${signal} ends the workload by ${signal} and the wrapper dies by it too`, async () => {
          const handle = startExec(ws.id, envelope(["sleep", "30"], { options: ws.options, env: { PATH } }));
          await handle.waitEvent("started");
          process.kill(handle.pid, signal);
          expectComplete(await handle.done, null, signal);
        });
      }

      for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
        test(`${signal} once the workload has run a while ends it by ${signal}, and the wrapper dies by it too`, async () => {
          const handle = startExec(ws.id, envelope(["sleep", "30"], { options: ws.options, env: { PATH } }));
          await handle.waitEvent("started");
          // Well after started, with the wrapper idle in its event loop; not a timing assertion.
          await Bun.sleep(150);
          process.kill(handle.pid, signal);
          expectComplete(await handle.done, null, signal);
        });
      }

      test.skipIf(PROC)(`a signal sent right after spawn, before started, still wins (${EARLY_TRIALS} trials)`, async () => {
        for (let i = 0; i < EARLY_TRIALS; i++) {
          const tag = `${30 + i / 1000 + Math.floor(Math.random() * 1000) / 1e6}`;
          const handle = startExec(ws.id, envelope(["sleep", tag], { options: ws.options, env: { PATH } }));
          // Jitter spreads the signal over start-up: before the handlers exist, between handlers
          // and launch (queued), and around `started`.
          await Bun.sleep(i % 12);
          process.kill(handle.pid, "SIGTERM");
          const result = await handle.done;
          // Either nothing was launched yet (the wrapper died by SIGTERM) or the workload did.
          expect(result.signal).toBe("SIGTERM");
          if (result.events.length > 0) expectComplete(result, null, "SIGTERM");
          expect(processesWith(`sleep\u0000${tag}`)).toEqual([]);
        }
        // Which branch each trial takes depends on the machine's speed; the next test pins the queue.
      });

      test.skipIf(PROC)("a signal that arrives after the handlers exist but before the envelope is queued and delivered at launch", async () => {
        const tag = `${30 + Math.floor(Math.random() * 1000) / 1000}`;
        const handle = startExec(ws.id, envelope(["sleep", tag], { options: ws.options, env: { PATH } }), { holdEnvelope: true });
        // SigCgt shows the wrapper catches SIGTERM (bit 15 - 1): its handlers are installed.
        const catches = () => BigInt(`0x${/SigCgt:\s*([0-9a-f]+)/.exec(readFileSync(`/proc/${handle.pid}/status`, "latin1"))?.[1] ?? "0"}`);
        await until("the wrapper to catch SIGTERM", () => (catches() & (1n << 14n)) !== 0n);
        process.kill(handle.pid, "SIGTERM");
        await Bun.sleep(20);
        handle.sendEnvelope();
        handle.closeStdin();
        expectComplete(await handle.done, null, "SIGTERM");
        expect(processesWith(`sleep\u0000${tag}`)).toEqual([]);
      });

      test.skipIf(PROC)("SIGTERM to `sh -c 'sleep 30 & wait'` leaves no sleep behind", async () => {
        const tag = `${30 + Math.floor(Math.random() * 1000) / 1000}`;
        const handle = startExec(ws.id, envelope(["sh", "-c", `sleep ${tag} & wait`], { options: ws.options, env: { PATH } }));
        await handle.waitEvent("started");
        await until("the background sleep", () => processesWith(`sleep\u0000${tag}`).length > 0);
        expect(processesWith(`sleep\u0000${tag}`).length).toBe(1);
        process.kill(handle.pid, "SIGTERM");
        expectComplete(await handle.done, null, "SIGTERM");
        expect(processesWith(`sleep\u0000${tag}`)).toEqual([]);
      });

      test.skipIf(PROC)("a background job left behind by an exiting leader is cleaned up before exit", async () => {
        const tag = `${40 + Math.floor(Math.random() * 1000) / 1000}`;
        const result = await run(["sh", "-c", `sleep ${tag} >/dev/null 2>&1 & exit 3`]);
        expectComplete(result, 3);
        expect(processesWith(`sleep\u0000${tag}`)).toEqual([]);
      });
    });

    describe("execution identities", () => {
      test("an execId is never reused", async () => {
        const env = envelope(["true"], { options: ws.options, env: { PATH } });
        const first = startExec(ws.id, env);
        first.closeStdin();
        expectComplete(await first.done, 0);
        const second = startExec(ws.id, env);
        second.closeStdin();
        const result = await second.done;
        expect(result.code).toBe(1);
        expect(result.events).toEqual([]);
        expect(result.stderr).toContain("never reused");
      });

      test("a missing workspace is refused", async () => {
        const handle = startExec("no-such-workspace", envelope(["true"], { options: ws.options, env: { PATH } }));
        const result = await handle.done;
        expect(result.code).toBe(1);
        expect(result.stderr).toContain('workspace "no-such-workspace" does not exist');
        expect(result.events).toEqual([]);
      });

      test("an invalid envelope launches nothing and emits no event", async () => {
        const bad = envelope(["true"], { options: ws.options, env: { PATH }, root: "/" });
        const result = await startExec(ws.id, bad).done;
        expect(result.code).toBe(1);
        expect(result.stderr).toContain('unknown key "root"');
        expect(result.events).toEqual([]);
      });

      test("a second frame on fd 3 in pipes mode is a protocol error that kills the workload", async () => {
        const handle = startExec(ws.id, envelope(["sleep", "30"], { options: ws.options, env: { PATH } }), {
          keepControls: true,
        });
        await handle.waitEvent("started");
        handle.sendControl('{"type":"signal","protocolVersion":1,"signal":"SIGTERM"}\n');
        const result = await handle.done;
        expect(result.events.map((e) => e.type)).toEqual(["started", "error", "eof", "exit"]);
        expect(result.violation).toBeNull();
        expect(result.events[3]).toMatchObject({ type: "exit", code: null, signal: "SIGKILL" });
      });
    });

    describe("concurrency", () => {
      test("20 execs launched at once in one workspace all complete with their own output", async () => {
        const handles = Array.from({ length: 20 }, (_, i) => startExec(ws.id, envelope(["sh", "-c", `echo run-${i}`], { options: ws.options, env: { PATH } })));
        for (const handle of handles) handle.closeStdin();
        const results = await Promise.all(handles.map((handle) => handle.done));
        results.forEach((result, i) => {
          expectComplete(result, 0);
          expect(result.stdout.toString()).toBe(`run-${i}\n`);
        });
      });
    });
  });
}
