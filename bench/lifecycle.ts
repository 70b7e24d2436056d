/**
 * Figure 4: lifecycle latency. Wall time of one process per operation, driven the way the daemon
 * drives it (node:child_process, request on stdin, whole stdout parsed), against the empty
 * program (bench/floor.ts, the aims' baseline) and `/bin/true`, spawned the same way with the
 * same stdin. Trials rotate the three.
 * - the empty program itself against /bin/true (context: the floor of this stack)
 * - describe
 * - inspect of a ready workspace in a store holding 1 workspace, and one holding 1 000
 *   (999 rows written straight into the store; the measured
 *   one made by the binary's own `create`)
 * - create (host-directory, existing = adopt) then destroy of the same workspace, each timed.
 * - signal SIGKILL after a wrapper crash (the daemon's bounded cleanup).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { openStore } from "../src/store/db.ts";
import { insertCreating, updateWorkspace } from "../src/store/workspaces.ts";
import { BenchExec, envelope } from "./driver.ts";
import { testCgroupRoot } from "../kit/cgroup.ts";
import { withFloors, type FloorProgram, type FloorRuns } from "./floor.ts";
import { BIN, onCleanup, runProcess, tempDir, type RunResult } from "./procs.ts";
import { figure, skipped, type Figure } from "./report.ts";
import { summarize, type Summary } from "./stats.ts";

export interface LifecycleOptions {
  trials: number;
  warmup: number;
  /** Workspaces in the big store (1 000 in the issue). */
  manyWorkspaces: number;
  empty: FloorProgram;
}

const TRUE = "/bin/true";

/** An aim stated as a multiple of the empty program (issue 14). */
function timesEmpty(limit: number) {
  return { text: `≤ ${limit}× empty`, check: ({ ratio }: { ratio: number }) => ratio <= limit };
}

const request = (options: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  `${JSON.stringify({ protocolVersion: 1, ...extra, options })}\n`;

function createInput(workspaceId: string, path: string) {
  return { workspaceId, project: { projectId: "bench", source: { kind: "host-directory", path } }, placement: { kind: "existing" } };
}

/** Runs one op and checks the response type; throws with stderr otherwise. */
async function op(args: string[], stdin: string, expect: string | null): Promise<RunResult> {
  const result = await runProcess([BIN, ...args], { stdin });
  if (result.code !== 0) throw new Error(`${args[0]} exited ${result.code ?? result.signal}: ${result.stderr.trim()}`);
  if (expect !== null) {
    const type = (JSON.parse(result.stdout) as { type?: string; inspection?: { status: string } }).inspection?.status ?? JSON.parse(result.stdout).type;
    if (type !== expect) throw new Error(`${args[0]} answered ${result.stdout.trim()}, expected ${expect}`);
  }
  return result;
}

/** Why an op cannot be measured in this build, or null when it runs. */
async function unavailable(command: string): Promise<string | null> {
  const result = await runProcess([BIN, command, "--workspace-id", "probe"], { stdin: request({ stateDirectory: tempDir("phr-bench-probe-") }) });
  if (result.stderr.includes("not implemented")) return `${command} is not implemented in this build`;
  return null;
}

function fmt(s: Summary): string {
  return `p50 ${s.p50.toFixed(2)} / p90 ${s.p90.toFixed(2)} / max ${s.max.toFixed(1)} ms`;
}

/** Rotates `measure` with the empty program and /bin/true (same stdin, same API) each round. */
function against(options: LifecycleOptions, stdin: string, measure: (i: number) => Promise<number[]>): Promise<FloorRuns<number[]>> {
  return withFloors(options, measure, {
    empty: async () => (await runProcess([options.empty.path], { stdin })).ms,
    true: async () => (await runProcess([TRUE], { stdin })).ms,
  });
}

/** The k-th timing of every round. */
function column(runs: FloorRuns<number[]>, k: number): Summary {
  return summarize(runs.ours.map((times) => times[k]!));
}

function lifecycleFigure(id: string, title: string, runs: FloorRuns<number[]>, k: number, aim: ReturnType<typeof timesEmpty> | null, stats: Record<string, unknown> = {}): Figure {
  const ours = column(runs, k);
  const empty = summarize(runs.empty);
  const floorTrue = summarize(runs.true);
  return figure({
    id,
    family: "lifecycle",
    title,
    unit: "ms",
    better: "lower",
    value: ours.p50,
    baseline: { label: "empty program, same stdin", value: empty.p50 },
    floors: { empty: empty.p50, true: floorTrue.p50, trueLabel: "/bin/true, same stdin" },
    ...(aim ? { aim } : {}),
    detail: `ours ${fmt(ours)}; empty ${fmt(empty)}`,
    stats: { ours, empty, true: floorTrue, ...stats },
  });
}

/** A store with `count` ready adopted workspaces; returns its options and one id to inspect. */
async function populatedHome(count: number): Promise<{ options: { stateDirectory: string }; id: string }> {
  const dir = tempDir("phr-bench-home-");
  const options = { stateDirectory: join(dir, "home") };
  const measured = join(dir, "measured");
  mkdirSync(measured);
  const id = "bench-measured";
  await op(["create", "--workspace-id", id], request(options, { input: createInput(id, measured) }), "state");
  const { db } = openStore(options);
  try {
    db.transaction(() => {
      for (let i = 1; i < count; i++) {
        const root = join(dir, `ws-${i}`);
        mkdirSync(root);
        const workspaceId = `bench-${String(i).padStart(4, "0")}`;
        insertCreating(db, { workspaceId, owner: "default", input: createInput(workspaceId, root), inputDigest: "", hostDirectory: "adopt", holder: { pid: process.pid, startTicks: 0, bootId: "" }, op: "create" });
        updateWorkspace(db, workspaceId, { status: "ready", kind: "adopted", root, lock: null });
      }
    }).immediate();
  } finally {
    db.close();
  }
  return { options, id };
}

export async function lifecycleFigures(options: LifecycleOptions): Promise<Figure[]> {
  const figures: Figure[] = [];
  const floor = await against(options, "", async () => [(await runProcess([options.empty.path])).ms]);
  const empty = column(floor, 0);
  const floorTrue = summarize(floor.true);
  figures.push(
    figure({
      id: "lifecycle.empty-program",
      family: "lifecycle",
      title: "context: the empty program (release flags)",
      unit: "ms",
      better: "lower",
      value: empty.p50,
      baseline: { label: "/bin/true, same stdin", value: floorTrue.p50 },
      detail: `ours ${fmt(empty)}; /bin/true ${fmt(floorTrue)}; an empty file built with ${options.empty.flags.join(" ")}: the start-up every call pays before any of our code runs`,
      stats: { ours: empty, true: floorTrue },
    }),
  );
  const describe = await against(options, "", async () => [(await op(["describe"], "", null)).ms]);
  // Issue 33's aim (issue 14's was 1.3×): a bare describe is answered before the command table loads.
  figures.push(lifecycleFigure("lifecycle.describe", "describe", describe, 0, timesEmpty(1.1)));

  const missing = (await unavailable("create")) ?? (await unavailable("inspect")) ?? (await unavailable("destroy"));
  const base = { family: "lifecycle" as const, unit: "ms", better: "lower" as const };
  if (missing) {
    figures.push(
      skipped({ ...base, id: "lifecycle.inspect.1", title: "inspect, 1 workspace in the store", reason: missing }),
      skipped({ ...base, id: `lifecycle.inspect.${options.manyWorkspaces}`, title: `inspect, ${options.manyWorkspaces} workspaces in the store`, reason: missing, aim: timesEmpty(1.6).text }),
      skipped({ ...base, id: "lifecycle.create", title: "create (adopt)", reason: missing, aim: timesEmpty(3).text }),
      skipped({ ...base, id: "lifecycle.destroy", title: "destroy (adopted)", reason: missing, aim: timesEmpty(3).text }),
    );
    return figures;
  }

  for (const count of [1, options.manyWorkspaces]) {
    const home = await populatedHome(count);
    const stdin = request(home.options);
    const result = await against(options, stdin, async () => [(await op(["inspect", "--workspace-id", home.id], stdin, "ready")).ms]);
    // The aim is on the big store; the small one shows what the store's size costs.
    const aim = count === options.manyWorkspaces ? timesEmpty(1.6) : null;
    figures.push(lifecycleFigure(`lifecycle.inspect.${count}`, `inspect, ${count} workspace${count === 1 ? "" : "s"} in the store`, result, 0, aim, { workspaces: count }));
  }

  const dir = tempDir("phr-bench-adopt-");
  // Its executions' cgroups go under a root of the bench's own, removed at cleanup.
  const cgroups = testCgroupRoot();
  if (cgroups) onCleanup(cgroups.cleanup);
  const homeOptions = { stateDirectory: join(dir, "home"), ...(cgroups ? { cgroupRoot: cgroups.path } : {}) };
  const project = join(dir, "project");
  mkdirSync(project);
  const pair = await against(options, request(homeOptions), async (i) => {
    const id = `bench-adopt-${i}`;
    const created = await op(["create", "--workspace-id", id], request(homeOptions, { input: createInput(id, project) }), "state");
    const destroyed = await op(["destroy", "--workspace-id", id], request(homeOptions), "ok");
    return [created.ms, destroyed.ms];
  });
  figures.push(
    lifecycleFigure("lifecycle.create", "create (host-directory, existing: adopt)", pair, 0, timesEmpty(3)),
    lifecycleFigure("lifecycle.destroy", "destroy of that adopted workspace", pair, 1, timesEmpty(3)),
  );
  figures.push(await signalCleanupFigure(options, homeOptions, project));
  return figures;
}

/**
 * The daemon's bounded cleanup: the wrapper is SIGKILLed right after `started` and `signal
 * --signal SIGKILL` must reap the detached three-process workload within 750 ms.
 */
async function signalCleanupFigure(options: LifecycleOptions, homeOptions: { stateDirectory: string; cgroupRoot?: string }, project: string): Promise<Figure> {
  const id = "bench-signal";
  await op(["create", "--workspace-id", id], request(homeOptions, { input: createInput(id, project) }), "state");
  const stdin = request(homeOptions);
  const result = await against(options, stdin, async () => {
    const env = envelope(["/bin/sh", "-c", "sleep 30 & sleep 30 & wait"], { options: homeOptions, env: { PATH: "/usr/bin:/bin" } });
    const exec = new BenchExec(id, env);
    await exec.started;
    exec.child.kill("SIGKILL");
    await new Promise((resolve) => (exec.child.exitCode !== null || exec.child.signalCode !== null ? resolve(null) : exec.child.once("exit", resolve)));
    const cleanup = await op(["signal", "--workspace-id", id, "--exec-id", env.execId as string, "--signal", "SIGKILL"], stdin, null);
    await exec.done;
    return [cleanup.ms];
  });
  const ours = column(result, 0);
  const empty = summarize(result.empty);
  const floorTrue = summarize(result.true);
  return figure({
    id: "lifecycle.signal-kill",
    family: "lifecycle",
    title: "signal SIGKILL after a wrapper crash (3 processes)",
    unit: "ms",
    better: "lower",
    value: ours.p50,
    baseline: { label: "empty program, same stdin", value: empty.p50 },
    floors: { empty: empty.p50, true: floorTrue.p50, trueLabel: "/bin/true, same stdin" },
    aim: { text: "max < 750 ms budget", check: () => ours.max < 750 },
    detail: `ours ${fmt(ours)}; empty ${fmt(empty)}; the daemon gives this 750 ms (older daemons 1000 ms)`,
    stats: { ours, empty, true: floorTrue },
  });
}
