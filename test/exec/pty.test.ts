/**
 * exec in PTY mode (SPEC §4 PTY bullets, §5 item 4, issue 5), driven like the daemon: five
 * socketpair stdio, the envelope on fd 3 which stays open for resize and signal frames, fd 4
 * judged by the lifecycle checker. "PTY output remains raw workload bytes on fd 1."
 */
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { closeSync, existsSync, openSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { listProcesses, readProcess } from "../../src/platform/process.ts";
import { request, runBinary } from "../../kit/binary.ts";
import { newExecId, frame, resizeFrame, signalFrame } from "../../kit/envelope.ts";
import type { ExecResult } from "../support/daemon.ts";
import { ISOLATIONS, cannotIsolate } from "../support/containment.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { killLeftovers, sessionMembers, startPty, workloadOf } from "../support/pty.ts";
import { markedPids, statusField } from "../support/procs.ts";
import { until } from "../support/poll.ts";
import { linuxOnly } from "../support/platform.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc). */
const PROC = linuxOnly("exec/pty.test.ts, PTY sessions and leftovers found through /proc", "/proc");

// Each test spawns the compiled binary and real PTYs; give a loaded 2-core machine room.
setDefaultTimeout(20_000);

for (const isolation of ISOLATIONS) {
  describe.skipIf(PROC || cannotIsolate(isolation, "exec/pty.test.ts"))(`isolation ${JSON.stringify(isolation)}`, () => {
    let ws: ReadyWorkspace;

    beforeAll(async () => {
      ws = await readyWorkspace("pty", "seed", { isolation });
    });

    afterEach(async () => {
      await killLeftovers();
    });

    afterAll(() => ws?.cleanup());

    const started = { type: "started", protocolVersion: 1 };
    const eof = { type: "eof", protocolVersion: 1 };
    const exit = (code: number | null, signal: string | null = null) => ({ type: "exit", protocolVersion: 1, code, signal });
    const resized = (id: number) => ({ type: "resized", protocolVersion: 1, id });

    /** A complete, legal lifecycle ending in `exit`. */
    function expectLifecycle(result: ExecResult, ...middle: object[]): void {
      expect(result.violation).toBeNull();
      expect(result.events).toEqual([started, ...middle] as never);
    }

    /** The wrapper mirrored the workload's end. */
    function expectMirrored(result: ExecResult, code: number | null, signal: string | null): void {
      expect({ code: result.code, signal: result.signal }).toEqual({ code, signal });
    }

    const text = (result: ExecResult) => result.stdout.toString();

    describe("the workload's terminal", () => {
      test("fd 0 and fd 1 are a terminal, initially 24 rows by 80 columns", async () => {
        const result = await startPty(ws, ["/bin/sh", "-c", "test -t 0 && test -t 1 && test -t 2 && stty size"]).done;
        expect(text(result)).toBe("24 80\r\n");
        expectLifecycle(result, eof, exit(0));
        expectMirrored(result, 0, null);
      });

      // In the sandbox the session is bwrap's (its monitor, the wrapper's child, holds the
      // terminal and cannot hand it over); the workload leads its group, the foreground one.
      test("the workload leads its own group (and without the sandbox its session), the PTY its controlling terminal, default signal state, no fd 3 or 4", async () => {
        const handle = startPty(ws, ["sleep", "30"]);
        await handle.waitEvent("started");
        const workload = await workloadOf(handle);
        expect(workload.pgid).toBe(workload.pid);
        const sessionLeader = isolation === "sandbox" ? listProcesses().find((p) => p.ppid === handle.pid)!.pid : workload.pid;
        expect(workload.sid).toBe(sessionLeader);
        expect(workload.tty).not.toBe(0);
        expect(workload.tpgid).toBe(workload.pid);
        expect(statusField(workload.pid, "SigIgn")).toBe("0000000000000000");
        expect(statusField(workload.pid, "SigBlk")).toBe("0000000000000000");
        const fds = readdirSync(`/proc/${workload.pid}/fd`).sort();
        expect(fds).toEqual(["0", "1", "2"]);
        const ttys = fds.map((fd) => readlinkSync(`/proc/${workload.pid}/fd/${fd}`));
        expect(ttys[0]).toMatch(/^\/dev\/pts\/\d+$/);
        expect(new Set(ttys).size).toBe(1);
        handle.sendControl(signalFrame("SIGTERM"));
        const result = await handle.done;
        expectLifecycle(result, eof, exit(null, "SIGTERM"));
      });

      test("fd 2 of the wrapper carries nothing from the workload: its stderr goes to the terminal", async () => {
        const result = await startPty(ws, ["/bin/sh", "-c", "echo oops >&2"]).done;
        expect(text(result)).toBe("oops\r\n");
        expect(result.stderr).toBe("");
        expectLifecycle(result, eof, exit(0));
      });
    });

    describe("raw bytes both ways", () => {
      test("UTF-8 λ typed in reaches the workload as ce bb, and λ printed comes back unchanged", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", 'stty -echo; printf R; IFS= read -r l; printf %s "$l" | od -An -tx1; printf "<%s>" "$l"']);
        await handle.waitStdout("R");
        handle.write("λ\n");
        const result = await handle.done;
        expect(text(result)).toMatch(/^R ce bb\r\n<λ>$/);
        expectLifecycle(result, eof, exit(0));
      });

      test("NUL and 0xff pass unchanged in both directions (raw mode)", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", "stty raw -echo; printf R; head -c 4 | od -An -tx1; printf '\\000\\377\\000\\377'"]);
        await handle.waitStdout("R");
        handle.write(Buffer.from([0x00, 0xff, 0x41, 0x00]));
        const result = await handle.done;
        expect(result.stdout).toEqual(Buffer.concat([Buffer.from("R 00 ff 41 00\n"), Buffer.from([0x00, 0xff, 0x00, 0xff])]));
        expectLifecycle(result, eof, exit(0));
      });

      test("a large input burst to a workload that is not reading yet is delivered completely", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", "stty raw -echo; printf R; sleep 0.5; head -c 204800 | wc -c; printf X"]);
        await handle.waitStdout("R");
        handle.write(Buffer.alloc(204800, 0x61));
        const result = await handle.done;
        expect(text(result)).toBe("R204800\nX");
        expectLifecycle(result, eof, exit(0));
      });
    });

    describe("resize", () => {
      test("after resize(99,41) and its ack, the very next input line sees 99x41 (the daemon's scenario)", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", 'IFS= read -r line; set -- $(stty size); printf "|%s|%sx%s\\n" "$line" "$2" "$1"']);
        await handle.waitEvent("started");
        handle.sendControl(resizeFrame(1, 41, 99));
        await handle.waitEvent("resized", (e) => e.type === "resized" && e.id === 1);
        handle.write("héllo\n");
        const result = await handle.done;
        expect(text(result)).toContain("|héllo|99x41");
        expectLifecycle(result, resized(1), eof, exit(0));
      });

      test("resizes sent with the envelope are applied at launch (the last wins) and acknowledged right after started", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", "stty size"], {}, { withEnvelope: resizeFrame(1, 30, 100) + resizeFrame(2, 33, 111) });
        const result = await handle.done;
        expect(text(result)).toBe("33 111\r\n");
        expectLifecycle(result, resized(1), resized(2), eof, exit(0));
      });

      test("the workload gets SIGWINCH on resize", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", 'trap "stty size; exit 5" WINCH; printf R; while :; do sleep 0.02; done']);
        await handle.waitStdout("R");
        handle.sendControl(resizeFrame(7, 12, 34));
        const result = await handle.done;
        expect(text(result)).toBe("R12 34\r\n");
        expectLifecycle(result, resized(7), eof, exit(5));
      });
    });

    describe("exit and signals", () => {
      test("exit 9 is reported as {code: 9, signal: null} and mirrored", async () => {
        const result = await startPty(ws, ["/bin/sh", "-c", "exit 9"]).done;
        expectLifecycle(result, eof, exit(9));
        expectMirrored(result, 9, null);
      });

      for (const signal of ["SIGTERM", "SIGKILL", "SIGUSR1", "SIGHUP"]) {
        test(`a ${signal} frame ends the workload: {code: null, signal: "${signal}"}`, async () => {
          const handle = startPty(ws, ["sleep", "30"]);
          await handle.waitEvent("started");
          handle.sendControl(signalFrame(signal));
          const result = await handle.done;
          expectLifecycle(result, eof, exit(null, signal));
          expectMirrored(result, null, signal);
        });
      }

      test("a SIGKILL frame ends every process of the workload's session", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", "sleep 30 & sleep 30"]);
        await handle.waitEvent("started");
        const leader = await workloadOf(handle);
        await until("both sleeps", () => sessionMembers(leader).length >= 2);
        handle.sendControl(signalFrame("SIGKILL"));
        const result = await handle.done;
        expectLifecycle(result, eof, exit(null, "SIGKILL"));
        expect(sessionMembers(leader)).toEqual([]);
      });

      for (const signal of ["SIGTERM", "SIGKILL"]) {
        test(`a ${signal} frame in the same write as the envelope (before started) still ends the workload by ${signal}`, async () => {
          const handle = startPty(ws, ["sleep", "30"], {}, { withEnvelope: signalFrame(signal) });
          const result = await handle.done;
          expectLifecycle(result, eof, exit(null, signal));
          expectMirrored(result, null, signal);
        });
      }

      for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
        test(`${signal} received by the wrapper itself is forwarded to the workload`, async () => {
          const handle = startPty(ws, ["sleep", "30"]);
          await handle.waitEvent("started");
          handle.child.kill(signal);
          const result = await handle.done;
          expectLifecycle(result, eof, exit(null, signal));
          expectMirrored(result, null, signal);
        });
      }

      test("every signal the issue lists is accepted and delivered, SIGSTOP and SIGCONT included", async () => {
        const caught = ["SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGTSTP", "SIGTERM"];
        const names = caught.map((s) => s.slice(3)).join(" ");
        const script = `$|=1; for my $s (qw(${names} CONT)) { $SIG{$s} = sub { print "got $_[0]\\n" } } print "R"; sleep 1 while 1`;
        const handle = startPty(ws, ["perl", "-e", script]);
        await handle.waitStdout("R");
        const workload = await workloadOf(handle);
        for (const signal of caught) {
          handle.sendControl(signalFrame(signal));
          await handle.waitStdout(`got ${signal.slice(3)}\r\n`);
        }
        handle.sendControl(signalFrame("SIGSTOP"));
        await until("the workload to stop", () => readProcess(workload.pid)?.state === "T");
        handle.sendControl(signalFrame("SIGCONT"));
        await handle.waitStdout("got CONT");
        expect(readProcess(workload.pid)?.state).not.toBe("T");
        handle.sendControl(signalFrame("SIGKILL"));
        const result = await handle.done;
        expectLifecycle(result, eof, exit(null, "SIGKILL"));
      });

      test("a signal frame reaches the terminal's foreground job, which a job-control shell puts in its own group", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", 'trap "echo trapped" INT; set -m; printf R; sleep 30; echo "after $?"']);
        await handle.waitStdout("R");
        const leader = await workloadOf(handle);
        const job = await until("the foreground job", () => sessionMembers(leader).find((p) => p.pid !== leader.pid && p.pgid !== leader.pid && p.tpgid === p.pgid));
        expect(job.pgid).not.toBe(leader.pgid);
        handle.sendControl(signalFrame("SIGINT"));
        const result = await handle.done;
        expect(text(result)).toContain("after 130");
        expectLifecycle(result, eof, exit(0));
      });
    });

    describe("output and EOF", () => {
      test("2 MiB printed right before exit arrive completely before eof", async () => {
        const size = 2 * 1024 * 1024;
        const handle = startPty(ws, ["/bin/sh", "-c", `head -c ${size} /dev/zero; exit 3`]);
        let atEof = -1;
        void handle.waitEvent("eof").then(() => (atEof = handle.stdoutText().length));
        const result = await handle.done;
        expect(atEof).toBe(size);
        expect(result.stdout.length).toBe(size);
        expect(result.stdout.every((byte) => byte === 0)).toBe(true);
        expectLifecycle(result, eof, exit(3));
      });

      test("completion cleanup: a background job left in the session is ended before eof", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", 'sleep 30 & printf "%s;" $!; exit 6']);
        const result = await handle.done;
        expectLifecycle(result, eof, exit(6));
        // Every process the workload started is gone (in the sandbox $! is a pid of its own namespace).
        expect(Number(text(result).split(";")[0])).toBeGreaterThan(0);
        expect(markedPids()).toEqual([]);
      });

      test("a descendant outside the session holding the terminal open delays eof only briefly (and a cgroup ends it)", async () => {
        // The escapee writes its pid only after setsid(), so the leader exits once it is outside.
        const script = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 30' & while [ ! -s escaped.pid ]; do sleep 0.01; done; exit 7";
        const handle = startPty(ws, ["/bin/sh", "-c", script]);
        const result = await handle.done;
        expectLifecycle(result, eof, exit(7));
        // The lifecycle completed while the escapee still held the terminal (it sleeps 30 s): eof
        // did not wait for it. It left the session on purpose: in its cgroup, completion cleanup
        // ended it anyway; under process-group containment it escapes (the test's cleanup ends it).
        // In the sandbox nothing outlives the sandbox: its pid namespace took the escapee along.
        expect(markedPids().length).toBe(ws.cgroupRoot || isolation === "sandbox" ? 0 : 1);
      });

      test("closing fd 3 right after the envelope is control EOF: the workload runs to completion", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", "sleep 0.3; printf done; exit 4"], {}, { keepControls: false });
        const result = await handle.done;
        expect(text(result)).toBe("done");
        expectLifecycle(result, eof, exit(4));
      });

      // fd 0 EOF from the daemon becomes the terminal's EOF character (^D) exactly once: a canonical
      // reader sees end-of-file once; a second read blocks (there is no second EOF to give).
      test("stdin EOF sends the EOF character once: the first reader ends, the next one keeps waiting", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", "cat; echo second; cat; echo end"]);
        await handle.waitEvent("started");
        handle.write("abc\n");
        handle.closeStdin();
        await handle.waitStdout("second");
        await Bun.sleep(300);
        expect(handle.stdoutText()).not.toContain("end");
        handle.sendControl(signalFrame("SIGTERM"));
        const result = await handle.done;
        expect(text(result)).toBe("abc\r\nabc\r\nsecond\r\n");
        expectLifecycle(result, eof, exit(null, "SIGTERM"));
      });
    });

    describe("the daemon's side of fd 0, 1 and 3", () => {
      test("input and resize frames racing the workload's exit never reset the daemon's sockets, and every resize before eof is acknowledged", async () => {
        const errors: string[] = [];
        for (let run = 0; run < 10; run++) {
          const handle = startPty(ws, ["/bin/sh", "-c", "printf R; read x"]);
          handle.child.stdio[3]!.on("error", (error: Error) => errors.push(`fd 3: ${error.message}`));
          handle.child.stdin!.on("error", (error: Error) => errors.push(`fd 0: ${error.message}`));
          await handle.waitStdout("R");
          handle.write("x\n");
          // Like the daemon: keep typing and resizing until the exit event, then close fd 0 and fd 3.
          let id = 0;
          let exited = false;
          void handle.waitEvent("exit").then(() => (exited = true));
          while (!exited) {
            handle.sendControl(resizeFrame(++id, 30, 90));
            handle.write("y");
            await Bun.sleep(1);
          }
          const result = await handle.done;
          expect(result.violation).toBeNull();
          expect(result.code).toBe(0);
          const acked = result.events.filter((e) => e.type === "resized").map((e) => (e as { id: number }).id);
          expect(acked).toEqual(Array.from({ length: acked.length }, (_, i) => i + 1));
        }
        expect(errors).toEqual([]);
      });

      test("a daemon that closes fd 1 early does not upset the wrapper: the lifecycle still completes", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", "head -c 1048576 /dev/zero; exit 2"]);
        let stderr = "";
        handle.child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
        handle.child.stdout!.destroy();
        const exitEvent = await handle.waitEvent("exit");
        expect(exitEvent).toEqual(exit(2) as never);
        const status = await new Promise<number | null>((resolve) =>
          handle.child.exitCode !== null ? resolve(handle.child.exitCode) : handle.child.once("exit", (code) => resolve(code)),
        );
        expect(status).toBe(2);
        expect(handle.events).toEqual([started, eof, exit(2)] as never);
        expect(stderr).toBe("");
      });
    });

    describe("environment", () => {
      const envLines = (result: ExecResult) => text(result).split("\r\n").filter(Boolean).sort();

      test("`term` becomes TERM when the envelope's env has none", async () => {
        const result = await startPty(ws, ["/usr/bin/env"], { env: { A: "1" }, stdio: { kind: "pty", rows: 24, cols: 80, term: "xterm-256color" } }).done;
        expect(envLines(result)).toEqual(["A=1", "TERM=xterm-256color"]);
      });

      test("an env TERM wins over `term`", async () => {
        const result = await startPty(ws, ["/usr/bin/env"], { env: { TERM: "dumb" }, stdio: { kind: "pty", rows: 24, cols: 80, term: "xterm-256color" } }).done;
        expect(envLines(result)).toEqual(["TERM=dumb"]);
      });

      test("without `term` the env is exactly the envelope's", async () => {
        const result = await startPty(ws, ["/usr/bin/env"], { env: { B: "2" } }).done;
        expect(envLines(result)).toEqual(["B=2"]);
      });
    });

    describe("invalid frames", () => {
      const invalid: [string, string][] = [
        ["resize with rows 0", resizeFrame(1, 0, 99)],
        ["resize with cols 65536", resizeFrame(1, 41, 65536)],
        ["resize with a fractional size", resizeFrame(1, 41.5, 99)],
        ["malformed JSON", "{not json\n"],
        ["an unknown frame type", frame({ type: "paste", data: "x" })],
        ["a second spawn envelope", `${JSON.stringify({ type: "spawn", protocolVersion: 1, argv: ["true"], env: {}, purpose: { kind: "git" }, options: {}, execId: "x", stdio: { kind: "pipes" } })}\n`],
      ];

      for (const [name, bad] of invalid) {
        test(`${name} after started: error event, nothing resized, the workload session is gone`, async () => {
          // A resize would deliver SIGWINCH, which this workload reports at once.
          const handle = startPty(ws, ["/bin/sh", "-c", `sleep 30 & exec perl -e '$|=1; $SIG{WINCH}=sub{print "WINCH"}; print "R"; sleep 1 while 1'`]);
          await handle.waitStdout("R");
          const leader = await workloadOf(handle);
          handle.sendControl(bad);
          const result = await handle.done;
          expect(result.events.map((e) => e.type)).toEqual(["started", "error", "eof", "exit"]);
          expect(result.events.at(-1)).toEqual(exit(null, "SIGKILL") as never);
          expect(result.violation).toBeNull();
          expect(text(result)).toBe("R");
          expect(sessionMembers(leader)).toEqual([]);
        });
      }

      test("fd 0 failing for another reason than the daemon going away (a directory: EISDIR): error event, the session gone, the wrapper alive to report it", async () => {
        const dir = openSync(ws.root, "r");
        try {
          const handle = startPty(ws, ["/bin/sh", "-c", "sleep 30"], {}, { stdinFd: dir });
          const result = await handle.done;
          expect(result.violation).toBeNull();
          expect(result.events.map((e) => e.type)).toEqual(["started", "error", "eof", "exit"]);
          expect((result.events[1] as { message: string }).message).toContain("EISDIR");
          expect(result.events.at(-1)).toEqual(exit(null, "SIGKILL") as never);
          expectMirrored(result, null, "SIGKILL");
        } finally {
          closeSync(dir);
        }
      });

      test("fd 1 refusing the output (ENOSPC, /dev/full): the exit is still the workload's, on fd 4 and mirrored", async () => {
        const full = openSync("/dev/full", "w");
        try {
          const result = await startPty(ws, ["/bin/sh", "-c", "echo lost; exit 3"], {}, { stdoutFd: full }).done;
          expectLifecycle(result, eof, exit(3));
          expectMirrored(result, 3, null);
        } finally {
          closeSync(full);
        }
      });

      test("an invalid resize with the envelope: error event, nothing launched", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", "touch launched"], {}, { withEnvelope: resizeFrame(1, 0, 99) });
        const result = await handle.done;
        expect(result.events.map((e) => e.type)).toEqual(["error"]);
        expect(result.code).toBe(1);
        expect(existsSync(join(ws.root, "launched"))).toBe(false);
      });

      test("after an invalid resize a fresh exec works", async () => {
        const bad = startPty(ws, ["sleep", "30"]);
        await bad.waitEvent("started");
        bad.sendControl(resizeFrame(1, 0, 99));
        expect((await bad.done).events.map((e) => e.type)).toContain("error");
        const result = await startPty(ws, ["/bin/sh", "-c", "stty size"]).done;
        expect(text(result)).toBe("24 80\r\n");
        expectLifecycle(result, eof, exit(0));
      });

      test("an unknown signal name: error event, and no leftover sleep of `sleep 30 & sleep 30`", async () => {
        const handle = startPty(ws, ["/bin/sh", "-c", "sleep 30 & sleep 30"]);
        await handle.waitEvent("started");
        const leader = await workloadOf(handle);
        await until("both sleeps", () => sessionMembers(leader).length >= 2);
        handle.sendControl(signalFrame("SIGNOPE"));
        const result = await handle.done;
        expect(result.events.map((e) => e.type)).toEqual(["started", "error", "eof", "exit"]);
        // The frame's value is not repeated back (controls are outside input); the field is named.
        expect((result.events[1] as { message: string }).message).toContain("signal: not a signal name");
        expect((result.events[1] as { message: string }).message).not.toContain("SIGNOPE");
        expect(sessionMembers(leader)).toEqual([]);
      });
    });

    describe("the same validation as pipes", () => {
      test("a cwd escaping the workspace launches nothing", async () => {
        const result = await startPty(ws, ["/bin/sh", "-c", "touch escaped"], { cwd: "../" }).done;
        expect(result.events).toEqual([]);
        expect(result.code).toBe(1);
        expect(result.stderr).toContain("cwd");
        expect(existsSync(join(ws.root, "..", "escaped"))).toBe(false);
      });

      test("an execId is never reused, not even across modes", async () => {
        const execId = newExecId();
        expect((await startPty(ws, ["true"], { execId }).done).code).toBe(0);
        const again = await startPty(ws, ["/bin/sh", "-c", "touch reused"], { execId }).done;
        expect(again.events).toEqual([]);
        expect(again.code).toBe(1);
        expect(again.stderr).toContain("never reused");
        expect(existsSync(join(ws.root, "reused"))).toBe(false);
      });
    });

    describe("the signal operation", () => {
      // Its duration against the daemon's 750 ms budget is a bench figure, not a test assertion.
      test("while the wrapper lives, `signal --signal SIGKILL` ends the session and the wrapper reports it", async () => {
        const execId = newExecId();
        const handle = startPty(ws, ["/bin/sh", "-c", "sleep 30 & sleep 30"], { execId });
        await handle.waitEvent("started");
        const leader = await workloadOf(handle);
        await until("both sleeps", () => sessionMembers(leader).length >= 2);
        const op = await runBinary(["signal", "--workspace-id", ws.id, "--exec-id", execId, "--signal", "SIGKILL"], { stdin: request(ws.options) });
        expect(op.code).toBe(0);
        expect(sessionMembers(leader)).toEqual([]);
        const result = await handle.done;
        expectLifecycle(result, eof, exit(null, "SIGKILL"));
      });


      test("with the wrapper SIGKILLed mid-session, `signal --signal SIGKILL` reaps the PTY workload session; a second call exits 0", async () => {
        const execId = newExecId();
        // The workload ignores SIGHUP, so the terminal hangup caused by the wrapper's death leaves it running.
        const handle = startPty(ws, ["/bin/sh", "-c", 'trap "" HUP; sleep 30 & sleep 30; :'], { execId });
        await handle.waitEvent("started");
        const leader = await workloadOf(handle);
        await until("both sleeps", () => sessionMembers(leader).length >= 3);
        handle.child.kill("SIGKILL");
        const crashed = await handle.done;
        expect(crashed.signal).toBe("SIGKILL");
        await Bun.sleep(100);
        // In the sandbox --die-with-parent ends it with the wrapper: signal then finds it done.
        if (isolation === "sandbox") await until("the sandbox to die with the wrapper", () => sessionMembers(leader).length === 0);
        else expect(sessionMembers(leader).length).toBeGreaterThanOrEqual(3);
        const args = ["signal", "--workspace-id", ws.id, "--exec-id", execId, "--signal", "SIGKILL"];
        const first = await runBinary(args, { stdin: request(ws.options) });
        expect(first.stderr).toBe("");
        expect(first.code).toBe(0);
        expect(sessionMembers(leader)).toEqual([]);
        const second = await runBinary(args, { stdin: request(ws.options) });
        expect(second.code).toBe(0);
      });
    });
  });
}

test.skipIf(PROC)("nothing this file started is left running", async () => {
  expect(await killLeftovers()).toBe(0);
});
