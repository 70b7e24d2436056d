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
import { CAN_STEER_PIDS, MODES, execIn, strangerAt, tag, workspaceIn, type Mode } from "../support/containment.ts";
import { lifecycle, reconcileKeeping, signalOp } from "../support/operation.ts";
import { executionRow } from "../support/store.ts";
import { allAlive } from "../support/procs.ts";
import { until } from "../support/poll.ts";

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

describe.skipIf(!CAN_STEER_PIDS)("a dead workload's pid given to a stranger", () => {
  if (!CAN_STEER_PIDS) console.log("pid reuse tests skipped: steering pids needs root and /proc/sys/kernel/ns_last_pid");

  test(`signal, pause, destroy and reconcile never touch the stranger's children (${MODES.join(", ")})`, async () => {
    const scenarios = await Promise.all(MODES.flatMap((mode) => OPS.map((op) => abandoned(mode, op))));
    // The workloads end by themselves; then their orphaned zombies are reaped by init.
    await until("the abandoned workloads to be gone", () => scenarios.every((s) => readProcess(s.pid) === null), 15_000);

    const strangers: { scenario: Scenario; children: number[] }[] = [];
    for (const scenario of scenarios) {
      const sleepTag = tag();
      const stranger = await strangerAt(scenario.pid, sleepTag);
      if (!stranger) {
        console.log(`pid reuse (${scenario.mode}, ${scenario.op}) skipped: steering never gave pid ${scenario.pid} to the stranger (other processes kept forking)`);
        continue;
      }
      cleanups.push(() => stranger.children.forEach((pid) => allAlive([pid]) && process.kill(pid, "SIGKILL")));
      for (const child of stranger.children) {
        const info = readProcess(child)!;
        // Led by nobody: the stranger leader (pid X) has exited, its children keep group and session X.
        expect([info.pgid, info.sid]).toEqual([scenario.pid, scenario.pid]);
      }
      strangers.push({ scenario, children: stranger.children });
    }
    console.log(`pid reuse: ${strangers.length} of ${scenarios.length} strangers steered onto a dead workload's pid`);
    expect(strangers.length).toBeGreaterThan(0);

    const touched: string[] = [];
    for (const { scenario, children } of strangers) {
      const result = await run(scenario);
      const context = `${scenario.mode} ${scenario.op}: ${result.stderr}`;
      expect(result.code, context).toBe(0);
      await Bun.sleep(50);
      if (!allAlive(children)) touched.push(`${scenario.mode} ${scenario.op}`);
      // Process groups cannot prove the stranger is not the workload's: they say so and leave it.
      else if (scenario.mode === "process-group") expect(result.stderr, context).toContain("cannot be proven to be its own and were left alone");
      else expect(result.stderr, context).toBe("");
    }
    expect(touched).toEqual([]);
    for (const { children } of strangers) expect(allAlive(children)).toBe(true);
  }, 120_000);
});
