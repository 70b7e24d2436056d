/**
 * Figure 7: what each containment costs, and what cleanup after a crash takes, measured next
 * to baselines from the same run (trials alternate ours and the baseline).
 * - exec of /bin/true (pipes) under cgroup containment (a cgroup per execution) and under
 *   process groups (the launch gate), each against /bin/true spawned directly (and, like every
 *   process-level figure, against the empty program: bench/floor.ts).
 * - cleanup after a crash: the wrapper SIGKILLed right after `started`, then `signal --signal
 *   SIGKILL` ends a three-process workload; per mode, against /bin/true with the same stdin.
 * - the completion check of an execution that left nothing behind (mitata): one read of its
 *   cgroup.events, against the /proc sweep process groups relied on before.
 */
import { do_not_optimize, measure } from "mitata";
import { mkdirSync, rmdirSync } from "node:fs";
import { join } from "node:path";
import { isPopulated } from "../src/platform/cgroup.ts";
import { listProcesses } from "../src/platform/process.ts";
import { CGROUP_UNAVAILABLE } from "../kit/cgroup.ts";
import { msBetween } from "./clock.ts";
import { BenchExec, DirectRun, describeFailure, envelope } from "./driver.ts";
import { withFloors, type FloorProgram } from "./floor.ts";
import { BIN, runProcess, withTimeout } from "./procs.ts";
import { figure, skipped, type Figure } from "./report.ts";
import { summarize, type Summary } from "./stats.ts";

export interface ContainmentOptions {
  trials: number;
  warmup: number;
  minCpuMs: number;
  workspace: { id: string; options: Record<string, unknown>; cgroupRoot: string | null };
  empty: FloorProgram;
}

type Mode = "cgroup" | "process-group";
const RUN_TIMEOUT_MS = 10_000;
const request = (options: Record<string, unknown>) => `${JSON.stringify({ protocolVersion: 1, options })}\n`;

function fmt(s: Summary): string {
  return `p50 ${s.p50.toFixed(2)} / p90 ${s.p90.toFixed(2)} / max ${s.max.toFixed(1)} ms`;
}

function optionsFor(options: ContainmentOptions, mode: Mode): Record<string, unknown> {
  return { ...options.workspace.options, containment: mode };
}

/** One exec of /bin/true, driven like the daemon: wall time and spawn → started. */
async function execTrue(options: ContainmentOptions, mode: Mode): Promise<{ wallMs: number; startedMs: number }> {
  const exec = new BenchExec(options.workspace.id, envelope(["/bin/true"], { options: optionsFor(options, mode) }));
  exec.closeStdin();
  const done = await withTimeout(exec.done, RUN_TIMEOUT_MS, `${mode} exec of /bin/true`);
  const failure = describeFailure(done);
  if (failure) throw new Error(`${mode} exec of /bin/true: ${failure}`);
  return { wallMs: msBetween(exec.spawnedAt, done.endedAt), startedMs: msBetween(exec.spawnedAt, await exec.started) };
}

async function direct(argv: string[]): Promise<number> {
  const run = new DirectRun(argv);
  run.closeStdin();
  const done = await withTimeout(run.done, RUN_TIMEOUT_MS, `direct ${argv[0]}`);
  return msBetween(run.spawnedAt, done.endedAt);
}

/** The wrapper of `sh -c 'sleep 30 & sleep 30 & wait'` SIGKILLed after `started`; the time of the `signal` that ends the rest. */
async function crashCleanup(options: ContainmentOptions, mode: Mode): Promise<number> {
  const env = envelope(["/bin/sh", "-c", "sleep 30 & sleep 30 & wait"], { options: optionsFor(options, mode), env: { PATH: "/usr/bin:/bin" } });
  const exec = new BenchExec(options.workspace.id, env);
  await withTimeout(exec.started, RUN_TIMEOUT_MS, `${mode} exec: started`);
  exec.child.kill("SIGKILL");
  await new Promise((resolve) => (exec.child.exitCode !== null || exec.child.signalCode !== null ? resolve(null) : exec.child.once("exit", resolve)));
  const cleanup = await runProcess([BIN, "signal", "--workspace-id", options.workspace.id, "--exec-id", env.execId as string, "--signal", "SIGKILL"], { stdin: request(optionsFor(options, mode)) });
  if (cleanup.code !== 0) throw new Error(`${mode} signal after a crash exited ${cleanup.code}: ${cleanup.stderr.trim()}`);
  await withTimeout(exec.done, RUN_TIMEOUT_MS, `${mode} crashed exec's streams`);
  return cleanup.ms;
}

/** mitata's best median (ms) of `fn` over two rounds. */
async function timeMs(fn: () => unknown, minCpuMs: number): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 2; round++) {
    const stats = await measure(() => do_not_optimize(fn()), { min_cpu_time: minCpuMs * 1e6, max_samples: 10_000 });
    best = Math.min(best, stats.p50 / 1e6);
  }
  return best;
}

export async function containmentFigures(options: ContainmentOptions): Promise<Figure[]> {
  const figures: Figure[] = [];
  const modes: Mode[] = CGROUP_UNAVAILABLE ? ["process-group"] : ["cgroup", "process-group"];
  const exec: Partial<Record<Mode, Summary>> = {};
  for (const mode of modes) {
    const runs = await withFloors(options, () => execTrue(options, mode), { empty: () => direct([options.empty.path]), true: () => direct(["/bin/true"]) });
    const wall = summarize(runs.ours.map((r) => r.wallMs));
    const started = summarize(runs.ours.map((r) => r.startedMs));
    const directTrue = summarize(runs.true);
    const empty = summarize(runs.empty);
    exec[mode] = wall;
    figures.push(
      figure({
        id: `containment.exec.${mode}`,
        family: "containment",
        title: `exec /bin/true (pipes), ${mode === "cgroup" ? "a cgroup per execution" : "process groups (launch gate)"}`,
        unit: "ms",
        better: "lower",
        value: wall.p50,
        baseline: { label: "/bin/true spawned directly", value: directTrue.p50 },
        floors: { empty: empty.p50, true: directTrue.p50, trueLabel: "/bin/true spawned directly" },
        detail: `overhead ${(wall.p50 - directTrue.p50).toFixed(2)} ms (p50); spawn → started ${fmt(started)}; ours ${fmt(wall)}; direct ${fmt(directTrue)}`,
        stats: { trials: options.trials, wall, started, direct: directTrue, empty },
      }),
    );
  }
  if (CGROUP_UNAVAILABLE) {
    figures.push(skipped({ id: "containment.exec.cgroup", family: "containment", title: "exec /bin/true (pipes), a cgroup per execution", unit: "ms", better: "lower", reason: CGROUP_UNAVAILABLE }));
  } else if (exec.cgroup && exec["process-group"]) {
    figures.push(
      figure({
        id: "containment.gate",
        family: "containment",
        title: "exec /bin/true: process groups (launch gate) against a cgroup per execution",
        unit: "ms",
        better: "lower",
        value: exec["process-group"].p50,
        baseline: { label: "the same exec with a cgroup", value: exec.cgroup.p50 },
        detail: `the gate (this binary's embedded engine, execve once the pid is on record) costs ${(exec["process-group"].p50 - exec.cgroup.p50).toFixed(2)} ms (p50)`,
      }),
    );
  }

  const stdin = request(options.workspace.options);
  const floor = {
    empty: async () => (await runProcess([options.empty.path], { stdin })).ms,
    true: async () => (await runProcess(["/bin/true"], { stdin })).ms,
  };
  for (const mode of modes) {
    const runs = await withFloors({ ...options, trials: Math.max(5, Math.floor(options.trials / 2)) }, () => crashCleanup(options, mode), floor);
    const ours = summarize(runs.ours);
    const base = summarize(runs.true);
    const empty = summarize(runs.empty);
    figures.push(
      figure({
        id: `containment.crash-cleanup.${mode}`,
        family: "containment",
        title: `signal SIGKILL after a wrapper crash (3 processes), ${mode}`,
        unit: "ms",
        better: "lower",
        value: ours.p50,
        baseline: { label: "/bin/true, same stdin", value: base.p50 },
        floors: { empty: empty.p50, true: base.p50, trueLabel: "/bin/true, same stdin" },
        aim: { text: "max < 750 ms budget", check: () => ours.max < 750 },
        detail: `ours ${fmt(ours)}; /bin/true ${fmt(base)}`,
        stats: { ours, floor: base, empty },
      }),
    );
  }

  if (options.workspace.cgroupRoot) {
    const empty = join(options.workspace.cgroupRoot, `bench-empty-${process.pid}`);
    mkdirSync(empty);
    try {
      const cgroupCheck = await timeMs(() => isPopulated(empty), options.minCpuMs);
      const sweep = await timeMs(() => listProcesses().length, options.minCpuMs);
      figures.push(
        figure({
          id: "containment.finish-check",
          family: "containment",
          title: "is anything of a finished execution left? (mitata)",
          unit: "ms",
          better: "lower",
          value: cgroupCheck,
          baseline: { label: "/proc sweep (process groups, before)", value: sweep },
          detail: `cgroup.events read ${(cgroupCheck * 1000).toFixed(1)} µs vs a sweep of ${listProcesses().length} processes ${(sweep * 1000).toFixed(0)} µs`,
        }),
      );
    } finally {
      rmdirSync(empty);
    }
  }
  return figures;
}
