/**
 * Case 1 of issue 11: a wrapper is killed, its workload ends later, and its pid X is handed to
 * an unrelated session leader that exits while its children run (an ordinary pipeline does
 * this). The record still names X. signal, pause, destroy and reconcile must never touch the
 * stranger's children — in either containment mode. Pid X is steered to the stranger through
 * /proc/sys/kernel/ns_last_pid (root only).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readProcess } from "../../src/platform/process.ts";
import type { ReadyWorkspace } from "../../kit/workspace.ts";
import { ALL_MODES, CAN_STEER_PIDS, cannotContain, execIn, strangerAt, tag, workspaceIn, type Mode } from "../support/containment.ts";
import { lifecycle, reconcileKeeping, signalOp } from "../support/operation.ts";
import { executionRow } from "../support/store.ts";
import { allAlive } from "../support/procs.ts";
import { until } from "../support/poll.ts";
import { skipBecause } from "../support/platform.ts";

const OPS = ["signal", "pause", "destroy", "reconcile"] as const;
type Op = (typeof OPS)[number];

const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

interface Scenario {
  mode: Mode;
  op: Op;
  ws: ReadyWorkspace;
  execId: string;
  pid: number;
}

/** An execution whose wrapper was SIGKILLed after `started` and whose workload then ended by itself. */
async function abandoned(mode: Mode, op: Op): Promise<Scenario> {
  const ws = await workspaceIn(mode, `reuse-${op}`);
  cleanups.push(ws.cleanup);
  const { handle, execId } = execIn(ws, ["sleep", "0.3"]);
  await handle.waitEvent("started");
  process.kill(handle.pid, "SIGKILL");
  await handle.exited;
  const pid = executionRow(ws.home, execId)!.pid;
  expect(pid).toBeGreaterThan(0);
  return { mode, op, ws, execId, pid };
}

function run(scenario: Scenario) {
  const { ws } = scenario;
  switch (scenario.op) {
    case "signal":
      return signalOp(ws, scenario.execId);
    case "pause":
      return lifecycle(ws, "pause");
    case "destroy":
      return lifecycle(ws, "destroy");
    case "reconcile":
      return reconcileKeeping(ws);
  }
}

/** Fresh executions to try before giving up: another process of the machine may take a dead pid before the stranger. */
const ARRANGE_TRIES = 5;

/**
 * A scenario whose dead workload's pid a stranger now holds. Each try abandons a fresh
 * execution and steers a stranger onto its pid; when the arrangement never lands, the test
 * fails: a condition that was never arranged checks nothing, so it must not pass.
 */
async function strangerOnDeadPid(mode: Mode, op: Op): Promise<{ scenario: Scenario; children: number[] }> {
  const missed: number[] = [];
  for (let attempt = 0; attempt < ARRANGE_TRIES; attempt++) {
    const scenario = await abandoned(mode, op);
    // The workload ends by itself; then its orphaned zombie is reaped by init.
    await until("the abandoned workload to be gone", () => readProcess(scenario.pid) === null, 15_000);
    const stranger = await strangerAt(scenario.pid, tag());
    if (stranger) {
      cleanups.push(() => stranger.children.forEach((pid) => allAlive([pid]) && process.kill(pid, "SIGKILL")));
      return { scenario, children: stranger.children };
    }
    missed.push(scenario.pid);
  }
  throw new Error(`could not arrange the condition: steering never gave a dead workload's pid (${missed.join(", ")}) to the stranger; other processes kept taking it`);
}

const NO_STEERING = skipBecause("containment/pid-reuse.test.ts", CAN_STEER_PIDS ? null : "steering pids needs root and /proc/sys/kernel/ns_last_pid");

describe.skipIf(NO_STEERING)("a dead workload's pid given to a stranger", () => {
  for (const mode of ALL_MODES) {
    for (const op of OPS) {
      test.skipIf(cannotContain(mode, "containment/pid-reuse.test.ts"))(`${mode}: ${op} never touches the stranger's children`, async () => {
        const { scenario, children } = await strangerOnDeadPid(mode, op);
        for (const child of children) {
          const info = readProcess(child)!;
          // Led by nobody: the stranger leader (pid X) has exited, its children keep group and session X.
          expect([info.pgid, info.sid]).toEqual([scenario.pid, scenario.pid]);
        }
        const result = await run(scenario);
        const context = `${mode} ${op}: ${result.stderr}`;
        expect(result.code, context).toBe(0);
        await Bun.sleep(50);
        expect(allAlive(children), context).toBe(true);
        // Process groups cannot prove the stranger is not the workload's: they say so and leave it.
        if (mode === "process-group") expect(result.stderr, context).toContain("cannot be proven to be its own and were left alone");
        else expect(result.stderr, context).toBe("");
      }, 120_000);
    }
  }
});
