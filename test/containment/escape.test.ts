/**
 * Case 2 of issue 11: a workload that calls setsid() or double-forks a daemon leaves its
 * session, so process groups lose it. In its cgroup it cannot get away: exit cleanup, signal,
 * pause, destroy and reconcile all end it.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { readProcess } from "../../src/platform/process.ts";
import { cgroupsUnder } from "../../kit/cgroup.ts";
import type { ReadyWorkspace } from "../../kit/workspace.ts";
import { execIn, tag, workspaceIn } from "../support/containment.ts";
import { lifecycle, reconcileKeeping, signalOp } from "../support/operation.ts";
import { executionRow } from "../support/store.ts";
import { until } from "../support/poll.ts";
import { processesWith } from "../support/procs.ts";
import { withoutCgroups } from "../support/platform.ts";

const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function workspace(): Promise<ReadyWorkspace> {
  const ws = await workspaceIn("cgroup", "escape");
  cleanups.push(ws.cleanup);
  return ws;
}

/**
 * One process that called setsid() and one daemon (double fork, setsid, parent gone), each
 * reporting its pid once it is out of the session; then the leader either exits or waits.
 */
function escapingWorkload(marker: string, leaderExits: boolean): string[] {
  const daemon = `(setsid sh -c 'echo daemon $$ >> escaped; exec sleep ${marker}' &)`;
  const setsid = `setsid sh -c 'echo setsid $$ >> escaped; exec sleep ${marker}' &`;
  const wait = `while [ "$(wc -l < escaped)" -lt 2 ]; do sleep 0.01; done`;
  return ["/bin/sh", "-c", `: > escaped; ${daemon}; ${setsid} ${wait}; ${leaderExits ? "exit 0" : `exec sleep ${marker}`}`];
}

/** The escapees really left the leader's session (and its group). */
function expectEscaped(marker: string, leaderPid: number): void {
  const pids = processesWith(`sleep\0${marker}`).filter((pid) => pid !== leaderPid);
  expect(pids.length).toBe(2);
  for (const pid of pids) expect(readProcess(pid)!.sid).not.toBe(leaderPid);
}

function expectNothingLeft(ws: ReadyWorkspace, marker: string): void {
  expect(processesWith(`sleep\0${marker}`)).toEqual([]);
  // Every execution cgroup is gone too; only the workspace's (and its home's) remain.
  expect(cgroupsUnder(ws.cgroupRoot!).filter((path) => path.split("/").length > 2)).toEqual([]);
}

describe.skipIf(withoutCgroups("containment/escape.test.ts, a workload that leaves its session"))("in its cgroup, a workload that leaves its session is still ended", () => {
  test("by exit cleanup: the leader exits, the setsid'd process and the daemon are gone before exit", async () => {
    const ws = await workspace();
    const marker = tag();
    const { handle } = execIn(ws, escapingWorkload(marker, true));
    const result = await handle.done;
    expect(result.events.map((e) => e.type)).toEqual(["started", "eof", "exit"]);
    expect(result.code).toBe(0);
    expectNothingLeft(ws, marker);
  });

  for (const op of ["signal", "pause", "destroy", "reconcile"] as const) {
    test(`by ${op}, after the wrapper was SIGKILLed`, async () => {
      const ws = await workspace();
      const marker = tag();
      const { handle, execId } = execIn(ws, escapingWorkload(marker, false));
      await handle.waitEvent("started");
      const leader = executionRow(ws.home, execId)!.pid;
      await until("both escapes", () => existsSync(`${ws.root}/escaped`) && processesWith(`sleep\0${marker}`).length === 3);
      expectEscaped(marker, leader);
      process.kill(handle.pid, "SIGKILL");
      await handle.exited;
      const result = op === "signal" ? await signalOp(ws, execId) : op === "reconcile" ? await reconcileKeeping(ws) : await lifecycle(ws, op);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expectNothingLeft(ws, marker);
      if (op === "destroy") expect(existsSync(ws.cgroupRoot!) && cgroupsUnder(ws.cgroupRoot!)).toEqual([]);
    });
  }
});
