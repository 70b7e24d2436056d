/**
 * Case 4 of issue 11: pause and destroy racing execs that are launching at that very moment
 * answer only once no workload of the workspace runs any more — in either containment mode.
 * The workloads ignore SIGTERM and keep writing into the workspace; after the answer, none of
 * them is alive and the file they write stops growing. Trials per mode: 8 by default, 100 with
 * PASEO_STRESS=1 (half pause, half destroy).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ExecResult } from "../support/daemon.ts";
import type { ReadyWorkspace } from "../../kit/workspace.ts";
import { ALL_MODES, cannotContain, execIn, tag, workspaceIn, type Mode } from "../support/containment.ts";
import { lifecycle } from "../support/operation.ts";
import { processesWith } from "../support/procs.ts";
import { linuxOnly } from "../support/platform.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc). */
const PROC = linuxOnly("containment/launch-race.test.ts, leftover workloads found through /proc", "/proc");

const TRIALS = process.env.PASEO_STRESS === "1" ? 100 : 8;
const LAUNCHES = 3;

const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A lifecycle the daemon accepts: refused before launch, failed, or started … exit. */
function expectLegal(result: ExecResult, context: string): void {
  const types = result.events.map((e) => e.type);
  if (types.length === 0) expect(result.stderr, context).toMatch(/is paused|does not exist|is being destroyed|was paused or destroyed while the workload launched; nothing was launched/);
  else if (types[0] === "error") expect(types, context).toEqual(["error"]);
  else {
    expect(result.violation, context).toBeNull();
    expect(types, context).toEqual(["started", "eof", "exit"]);
  }
}

function size(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

async function race(mode: Mode, op: "pause" | "destroy", ws: ReadyWorkspace, n: number): Promise<number> {
  const marker = tag();
  const out = join(ws.root, `out-${marker}`);
  // Ignores SIGTERM, so pause's grace runs out and SIGKILL does the work.
  const script = `trap '' TERM; while :; do echo $$ >> "${out}"; sleep 0.002; done; : ${marker}`;
  const launches = Array.from({ length: LAUNCHES }, () => execIn(ws, ["/bin/sh", "-c", script]));
  await Bun.sleep(n % 3 === 0 ? 0 : Math.random() * 40);
  const answer = await lifecycle(ws, op, { stopTimeoutMs: 50 });
  const context = `${mode} ${op} trial ${n}: ${answer.stderr}`;
  expect(answer.code, context).toBe(0);
  // The answer is in: nothing of the workspace may run any more.
  expect(processesWith(marker), context).toEqual([]);
  const written = size(out);
  await Bun.sleep(30);
  expect(size(out), `${context} (the workspace was still being written)`).toBe(written);
  const results = await Promise.all(launches.map(({ handle }) => handle.done));
  for (const result of results) expectLegal(result, `${context}; events ${JSON.stringify(result.events)}; stderr ${result.stderr}`);
  return results.filter((result) => result.events[0]?.type === "started").length;
}

describe.skipIf(PROC)("pause and destroy racing launches", () => {
  for (const mode of ALL_MODES) {
    test.skipIf(cannotContain(mode, "containment/launch-race.test.ts"))(`${mode}: ${TRIALS} races (${LAUNCHES} launches each): no workload runs after the answer`, async () => {
      const paused = await workspaceIn(mode, "race-pause");
      cleanups.push(paused.cleanup);
      let started = 0;
      for (let n = 0; n < TRIALS; n++) {
        if (n % 2 === 0) {
          started += await race(mode, "pause", paused, n);
          expect((await lifecycle(paused, "resume")).code).toBe(0);
        } else {
          const doomed = await workspaceIn(mode, "race-destroy");
          cleanups.push(doomed.cleanup);
          started += await race(mode, "destroy", doomed, n);
        }
      }
      console.log(`${mode}: ${started} of ${TRIALS * LAUNCHES} racing launches had started before the answer`);
    }, 300_000);
  }
});
