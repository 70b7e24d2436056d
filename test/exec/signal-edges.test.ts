/**
 * Exit and signal edges (issue 13), against the compiled binary driven like the daemon:
 * - a workload killed by a signal that has no name in the daemon's table (a real-time one) is
 *   reported as {code: 128+n, signal: null} and mirrored as that code, in both modes;
 * - every signal the wrapper can catch is forwarded to the workload (dumb-init style), except
 *   its own; in PTY mode SIGTSTP/SIGTTIN/SIGTTOU sent to the wrapper stay with it;
 * - signals the engine cannot catch (real-time ones, SIGSTKFLT) do not kill the wrapper.
 */
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { realtimeSignals } from "../../src/platform/libc/processes.ts";
import { DAEMON_SIGNALS, forwardedSignals } from "../../src/exec/signals.ts";
import { PATH, envelope, signalFrame } from "../../kit/envelope.ts";
import { startExec, type ExecHandle, type ExecResult } from "../support/daemon.ts";
import { ISOLATIONS, cannotIsolate } from "../support/containment.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { killLeftovers, startPty } from "../support/pty.ts";
import { until } from "../support/poll.ts";
import { linuxOnly } from "../support/platform.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc). */
const PROC = linuxOnly("exec/signal-edges.test.ts, leftovers found through /proc after each test", "/proc");

setDefaultTimeout(30_000);

const SIGRTMAX = realtimeSignals().at(-1)!;

for (const isolation of ISOLATIONS) {
  describe.skipIf(PROC || cannotIsolate(isolation, "exec/signal-edges.test.ts"))(`isolation ${JSON.stringify(isolation)}`, () => {
    let ws: ReadyWorkspace;

    beforeAll(async () => {
      ws = await readyWorkspace("sigedge", "seed", { isolation });
    });
    afterEach(async () => {
      await killLeftovers();
    });
    afterAll(() => ws?.cleanup());

    function startPipes(argv: string[]): ExecHandle {
      return startExec(ws.id, envelope(argv, { options: ws.options, env: { PATH } }));
    }

    function start(mode: "pipes" | "pty", argv: string[]): ExecHandle {
      return mode === "pty" ? startPty(ws, argv) : startPipes(argv);
    }

    /** The complete lifecycle, ending with `exit`, mirrored by the wrapper's own status. */
    function expectEnded(result: ExecResult, code: number | null, signal: string | null): void {
      expect(result.violation).toBeNull();
      expect(result.events).toEqual([
        { type: "started", protocolVersion: 1 },
        { type: "eof", protocolVersion: 1 },
        { type: "exit", protocolVersion: 1, code, signal },
      ]);
      expect({ code: result.code, signal: result.signal }).toEqual({ code, signal });
    }

    /**
     * A perl workload that prints `got NAME` for each signal in `names`, then `R` once its handlers
     * are in place; it dies by SIGTERM (no handler for it).
     */
    function reporter(names: string[]): string[] {
      const short = names.map((name) => name.slice(3)).join(" ");
      return ["perl", "-e", `$|=1; for my $s (qw(${short})) { $SIG{$s} = sub { print "got $_[0]\\n" } } print "R\\n"; sleep 1 while 1`];
    }

    describe("a death by a signal without a name", () => {
      for (const mode of ["pipes", "pty"] as const) {
        for (const [label, number] of [["signal 35", 35], ["SIGRTMAX", SIGRTMAX]] as const) {
          test(`${mode}: ${label} is reported as {code: ${128 + number}, signal: null} and mirrored as that code`, async () => {
            const handle = start(mode, ["/bin/sh", "-c", `kill -${number} $$`]);
            if (mode === "pipes") handle.closeStdin();
            const result = await handle.done;
            expectEnded(result, 128 + number, null);
            expect(result.stderr).toBe("");
          });
        }
      }
    });

    describe("the wrapper forwards every signal it can catch", () => {
      test("the daemon's signals are forwarded in both modes, and PTY mode forwards the pipes set less terminal job control", () => {
        // The forwarded set is derived (the table less WRAPPER_OWN); the test below sends each one.
        for (const mode of ["pipes", "pty"] as const) expect(forwardedSignals(mode)).toEqual(expect.arrayContaining([...DAEMON_SIGNALS]));
        expect(forwardedSignals("pty")).toEqual(forwardedSignals("pipes").filter((name) => !["SIGTSTP", "SIGTTIN", "SIGTTOU"].includes(name)));
      });

      test("pipes: SIGUSR1, SIGUSR2, SIGWINCH and every other forwarded signal sent to the wrapper reach the workload's handler", async () => {
        const names = forwardedSignals("pipes").filter((name) => name !== "SIGTERM");
        expect(names).toEqual(expect.arrayContaining(["SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGTSTP", "SIGQUIT", "SIGCONT"]));
        const handle = startPipes(reporter(names));
        handle.closeStdin();
        await handle.waitStdout("R\n");
        for (const name of names) {
          process.kill(handle.pid, name);
          await handle.waitStdout(`got ${name.slice(3)}\n`);
        }
        process.kill(handle.pid, "SIGTERM");
        expectEnded(await handle.done, null, "SIGTERM");
      });

      test("pty: SIGUSR1, SIGUSR2, SIGWINCH sent to the wrapper reach the workload; SIGTSTP, SIGTTIN, SIGTTOU stay with the wrapper, and a SIGTSTP frame still arrives", async () => {
        const handle = startPty(ws, reporter([...forwardedSignals("pty").filter((name) => name !== "SIGTERM"), "SIGTSTP", "SIGTTIN", "SIGTTOU"]));
        await handle.waitStdout("R\r\n");
        for (const name of ["SIGUSR1", "SIGUSR2", "SIGWINCH"] as const) {
          process.kill(handle.pid, name);
          await handle.waitStdout(`got ${name.slice(3)}\r\n`);
        }
        for (const name of ["SIGTSTP", "SIGTTIN", "SIGTTOU"] as const) process.kill(handle.pid, name);
        // SIGWINCH (28) is sent after them and has a higher number: had any of 20-22 been
        // forwarded, the workload would have reported it first.
        const before = handle.stdoutText().length;
        process.kill(handle.pid, "SIGWINCH");
        const after = await until("the second WINCH", () => (handle.stdoutText().slice(before).includes("got WINCH") ? handle.stdoutText().slice(before) : null));
        expect(after).not.toMatch(/got TSTP|got TTIN|got TTOU/);
        handle.sendControl(signalFrame("SIGTSTP"));
        await handle.waitStdout("got TSTP\r\n");
        process.kill(handle.pid, "SIGTERM");
        expectEnded(await handle.done, null, "SIGTERM");
      });

      for (const mode of ["pipes", "pty"] as const) {
        test(`${mode}: a real-time signal and SIGSTKFLT sent to the wrapper do not kill it (not forwarded: the engine cannot catch them)`, async () => {
          const handle = start(mode, reporter(["SIGUSR1"]));
          if (mode === "pipes") handle.closeStdin();
          await handle.waitStdout("R");
          process.kill(handle.pid, 40);
          process.kill(handle.pid, SIGRTMAX);
          process.kill(handle.pid, 16);
          // Still there, still forwarding.
          process.kill(handle.pid, "SIGUSR1");
          await handle.waitStdout("got USR1");
          process.kill(handle.pid, "SIGTERM");
          expectEnded(await handle.done, null, "SIGTERM");
        });
      }
    });
  });
}
