/**
 * Figure 4: lifecycle latency. Wall time of one process per operation, driven the way the daemon
 * drives it (node:child_process, request on stdin, whole stdout parsed), against `/bin/true`
 * spawned the same way with the same stdin: the process-start floor. Trials alternate.
 * - describe
 * - inspect of a ready workspace in a store holding 1 workspace, and one holding 1 000
 *   (999 rows written straight into the store, as test/support/workspace.ts does; the measured
 *   one made by the binary's own `create`)
 * - create (host-directory, existing = adopt) then destroy of the same workspace, each timed.
 * And, for context, the floor any Bun binary pays: a one-line program compiled with the
 * release build's flags (no aim; it tells how much of each figure is ours to win back).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HARDENING_FLAGS, SPEED_FLAGS } from "../release/compile.ts";
import { openStore } from "../src/store/db.ts";
import { insertCreating, updateWorkspace } from "../src/store/workspaces.ts";
import { BenchExec, envelope } from "./driver.ts";
import { testCgroupRoot } from "../test/support/cgroup.ts";
import { BIN, onCleanup, runProcess, tempDir, type RunResult } from "./procs.ts";
import { figure, skipped, type Figure } from "./report.ts";
import { summarize, type Summary } from "./stats.ts";

export interface LifecycleOptions {
  trials: number;
  warmup: number;
  /** Workspaces in the big store (1 000 in the issue). */
  manyWorkspaces: number;
}

const TRUE = "/bin/true";
const AIM = { text: "≤ 6× /bin/true", check: ({ ratio }: { ratio: number }) => ratio <= 6 };

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

/** Alternates `measure` with /bin/true (same stdin) and summarizes both. */
async function against(options: LifecycleOptions, stdin: string, measure: (i: number) => Promise<number[]>): Promise<{ ours: Summary[]; floor: Summary }> {
  const ours: number[][] = [];
  const floor: number[] = [];
  for (let i = 0; i < options.warmup + options.trials; i++) {
    const base = i % 2 === 0 ? await runProcess([TRUE], { stdin }) : null;
    const times = await measure(i);
    const after = base ?? (await runProcess([TRUE], { stdin }));
    if (i < options.warmup) continue;
    times.forEach((ms, k) => (ours[k] ??= []).push(ms));
    floor.push(after.ms);
  }
  return { ours: ours.map(summarize), floor: summarize(floor) };
}

function lifecycleFigure(id: string, title: string, ours: Summary, floor: Summary, stats: Record<string, unknown> = {}): Figure {
  return figure({
    id,
    family: "lifecycle",
    title,
    unit: "ms",
    better: "lower",
    value: ours.p50,
    baseline: { label: "/bin/true, same stdin", value: floor.p50 },
    aim: AIM,
    detail: `ours ${fmt(ours)}; /bin/true ${fmt(floor)}`,
    stats: { ours, floor, ...stats },
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

/** A one-line Bun program compiled like the release binary (writes one line, exits). */
function compileBunFloor(): string {
  const dir = tempDir("phr-bench-floor-");
  const entry = join(dir, "floor.ts");
  writeFileSync(entry, 'import { writeSync } from "node:fs";\nwriteSync(1, "{}\\n");\n');
  const out = join(dir, "floor");
  const result = Bun.spawnSync([process.execPath, "build", "--compile", ...HARDENING_FLAGS, ...SPEED_FLAGS, entry, "--outfile", out], { stdout: "ignore", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`compiling the Bun floor program failed: ${result.stderr.toString()}`);
  return out;
}

export async function lifecycleFigures(options: LifecycleOptions): Promise<Figure[]> {
  const figures: Figure[] = [];
  const floorBinary = compileBunFloor();
  const floor = await against(options, "", async () => [(await runProcess([floorBinary])).ms]);
  figures.push(
    figure({
      id: "lifecycle.bun-floor",
      family: "lifecycle",
      title: "context: compiled Bun hello-world",
      unit: "ms",
      better: "lower",
      value: floor.ours[0]!.p50,
      baseline: { label: "/bin/true, same stdin", value: floor.floor.p50 },
      detail: `ours ${fmt(floor.ours[0]!)}; /bin/true ${fmt(floor.floor)}; built with the release flags: the start-up every op pays before any of our code runs`,
      stats: { ours: floor.ours[0], floor: floor.floor },
    }),
  );
  const describe = await against(options, "", async () => [(await op(["describe"], "", null)).ms]);
  figures.push(lifecycleFigure("lifecycle.describe", "describe", describe.ours[0]!, describe.floor));

  const missing = (await unavailable("create")) ?? (await unavailable("inspect")) ?? (await unavailable("destroy"));
  const base = { family: "lifecycle" as const, unit: "ms", better: "lower" as const, aim: AIM.text };
  if (missing) {
    figures.push(
      skipped({ ...base, id: "lifecycle.inspect.1", title: "inspect, 1 workspace in the store", reason: missing }),
      skipped({ ...base, id: `lifecycle.inspect.${options.manyWorkspaces}`, title: `inspect, ${options.manyWorkspaces} workspaces in the store`, reason: missing }),
      skipped({ ...base, id: "lifecycle.create", title: "create (adopt)", reason: missing }),
      skipped({ ...base, id: "lifecycle.destroy", title: "destroy (adopted)", reason: missing }),
    );
    return figures;
  }

  for (const count of [1, options.manyWorkspaces]) {
    const home = await populatedHome(count);
    const stdin = request(home.options);
    const result = await against(options, stdin, async () => [(await op(["inspect", "--workspace-id", home.id], stdin, "ready")).ms]);
    figures.push(lifecycleFigure(`lifecycle.inspect.${count}`, `inspect, ${count} workspace${count === 1 ? "" : "s"} in the store`, result.ours[0]!, result.floor, { workspaces: count }));
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
    lifecycleFigure("lifecycle.create", "create (host-directory, existing: adopt)", pair.ours[0]!, pair.floor),
    lifecycleFigure("lifecycle.destroy", "destroy of that adopted workspace", pair.ours[1]!, pair.floor),
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
  const ours = result.ours[0]!;
  return figure({
    id: "lifecycle.signal-kill",
    family: "lifecycle",
    title: "signal SIGKILL after a wrapper crash (3 processes)",
    unit: "ms",
    better: "lower",
    value: ours.p50,
    baseline: { label: "/bin/true, same stdin", value: result.floor.p50 },
    aim: { text: "max < 750 ms budget", check: () => ours.max < 750 },
    detail: `ours ${fmt(ours)}; /bin/true ${fmt(result.floor)}; the daemon gives this 750 ms (older daemons 1000 ms)`,
    stats: { ours, floor: result.floor },
  });
}
