/**
 * Figure 3: what going through `exec` costs a workload, against the empty program
 * (bench/floor.ts) and `/bin/true` spawned directly through the same API (three pipes).
 * - Wall time of `/bin/true` through the wrapper (pipes, PTY) from spawn() to exit + every
 *   stream at EOF. Aim: pipes ≤ 2× empty + a direct /bin/true; PTY within 1.5× of pipes.
 * - Time from spawn() to the `started` event. Aim: pipes ≤ 1.3× empty; PTY within 1.5× of pipes.
 * - Peak RSS (VmHWM) of a wrapper holding a long-running workload, against the empty program's
 *   peak RSS. Aim: ≤ 1.4×.
 * - The memory of N (200) concurrent execs holding a workload each: the wrappers' total PSS
 *   (shared pages split between the processes that map them: what they cost together),
 *   against the 4 GiB the issue allows. Aim: well under (≤ half).
 * - The same PSS per wrapper (exec.concurrent.memory-per-wrapper), against as many of the least
 *   Bun wrapper (bench/workloads/bun-forwarder.ts) holding `cat` at once. Aim (issue 33): ≤ 3 MiB.
 * Rounds rotate the wrapped runs (pipes and PTY), the empty program and the direct /bin/true.
 * - With the sandbox (isolation "sandbox", when bwrap is installed): the same wall time and
 *   spawn → started, beside the unsandboxed exec of the same run (trials alternate the two), and
 *   bwrap alone starting /bin/true with the same namespaces (what bubblewrap itself costs, the
 *   rest is the in-sandbox init); the resident memory of the sandbox init while it holds a workload.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { msBetween } from "./clock.ts";
import { BenchExec, DirectRun, describeFailure, envelope } from "./driver.ts";
import { medianPeakRssMiB, withFloors, type FloorProgram } from "./floor.ts";
import { BIN, sleep, trackWorkload, withTimeout } from "./procs.ts";
import { figure, skipped, type Figure } from "./report.ts";
import { alternated, summarize, type Summary } from "./stats.ts";
import { StampReader, type Sigstamp } from "./workloads.ts";
import { listProcesses } from "../src/platform/process.ts";
import { bwrapArguments } from "../src/sandbox/bwrap.ts";
import { sandboxTool } from "../src/sandbox/tool.ts";

export interface ExecOptions {
  trials: number;
  warmup: number;
  workspace: BenchWorkspace;
  /** The same kind of workspace under isolation "sandbox"; why not, when there is none (bwrap missing). */
  sandboxed: BenchWorkspace | string;
  /** A sandboxed worktree of a git repository in the same home (why not, when there is none). */
  sandboxedGit: BenchWorkspace | string;
  sigstamp: Sigstamp;
  empty: FloorProgram;
  /** The least Bun wrapper (bench/workloads/bun-forwarder.ts): the engine's floor of a live wrapper's memory. */
  forwarder: FloorProgram;
  /** How many execs run at once for the memory figure (200 in the issue). */
  concurrent: number;
}

const TRUE = "/bin/true";
const RUN_TIMEOUT_MS = 10_000;

/** A workspace the bench made: its id and the options that select it. */
export type BenchWorkspace = { id: string; options: Record<string, unknown> };

/** `exec /bin/true` in `workspace`, driven like the daemon: spawn() to exit + EOF, and spawn() to `started`. */
export async function wrappedTrue(workspace: BenchWorkspace, mode: "pipes" | "pty"): Promise<{ wallMs: number; startedMs: number }> {
  const stdio = mode === "pty" ? { kind: "pty", rows: 24, cols: 80 } : { kind: "pipes" };
  const exec = new BenchExec(workspace.id, envelope([TRUE], { options: workspace.options, stdio }), { keepControls: mode === "pty" });
  exec.closeStdin();
  const done = await withTimeout(exec.done, RUN_TIMEOUT_MS, `${mode} exec of ${TRUE}`);
  exec.closeControls();
  const failure = describeFailure(done);
  if (failure) throw new Error(`${mode} exec of ${TRUE}: ${failure}`);
  return { wallMs: msBetween(exec.spawnedAt, done.endedAt), startedMs: msBetween(exec.spawnedAt, await exec.started) };
}

/** `exec /bin/true` in `workspace`, pipes: its wall time alone. */
export async function wallOfTrue(workspace: BenchWorkspace): Promise<number> {
  return (await wrappedTrue(workspace, "pipes")).wallMs;
}

/** A program spawned directly with three pipes, stdin closed: spawn() to exit + EOF. */
async function direct(argv: string[]): Promise<number> {
  const run = new DirectRun(argv);
  run.closeStdin();
  const done = await withTimeout(run.done, RUN_TIMEOUT_MS, `direct ${argv[0]}`);
  if (done.code !== 0) throw new Error(`direct ${argv[0]} exited ${done.code ?? done.signal}`);
  return msBetween(run.spawnedAt, done.endedAt);
}

function fmt(s: Summary): string {
  return `p50 ${s.p50.toFixed(2)} / p90 ${s.p90.toFixed(2)} / max ${s.max.toFixed(1)} ms`;
}

/** VmHWM, VmRSS and RssAnon (its private part) of a live process, in MiB. */
function memoryOf(pid: number): { peakMiB: number; rssMiB: number; anonMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { peakMiB: kib("VmHWM") / 1024, rssMiB: kib("VmRSS") / 1024, anonMiB: kib("RssAnon") / 1024 };
}

/** Rss, Pss and private bytes of a live process (MiB), from smaps_rollup; null when it is gone. */
export function rollupOf(pid: number): { rss: number; pss: number; private: number } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  } catch {
    return null;
  }
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0);
  return { rss: kib("Rss") / 1024, pss: kib("Pss") / 1024, private: (kib("Private_Clean") + kib("Private_Dirty")) / 1024 };
}

/** Rss, Pss and private MiB summed over live processes; throws, naming `what`, when one of them is gone. */
function liveMemory(pids: readonly number[], what: string): { rss: number; pss: number; private: number } {
  const total = { rss: 0, pss: 0, private: 0 };
  for (const pid of pids) {
    const memory = rollupOf(pid);
    if (memory === null) throw new Error(`${what} (pid ${pid}) ended before it was measured`);
    total.rss += memory.rss;
    total.pss += memory.pss;
    total.private += memory.private;
  }
  return total;
}

async function holdingPeak(options: ExecOptions, mode: "pipes" | "pty") {
  const stamps = new StampReader();
  const stdio = mode === "pty" ? { kind: "pty", rows: 24, cols: 80 } : { kind: "pipes" };
  const exec = new BenchExec(options.workspace.id, envelope(options.sigstamp.argv, { options: options.workspace.options, stdio }), {
    keepControls: mode === "pty",
    onStdout: stamps.feed,
  });
  try {
    await withTimeout(exec.started, RUN_TIMEOUT_MS, `${mode} exec of sigstamp: started`);
    trackWorkload(await withTimeout(stamps.ready, RUN_TIMEOUT_MS, `${mode} sigstamp: ready`));
    await sleep(300);
    const rollup = rollupOf(exec.pid) ?? { rss: Number.NaN, pss: Number.NaN, private: Number.NaN };
    return { ...memoryOf(exec.pid), pss: rollup.pss, private: rollup.private };
  } finally {
    exec.closeStdin();
    await withTimeout(exec.done, RUN_TIMEOUT_MS, `${mode} sigstamp exec: exit`);
    exec.closeControls();
  }
}

/**
 * A worktree workspace (branch placement) of a fresh repository beside `sandboxed`'s, with the
 * same options: every exec in it prepares and syncs its private git dir (src/sandbox/git/sync-in.ts, sync-out.ts).
 */
export async function gitWorktreeWorkspace(sandboxed: { id: string; root: string; options: Record<string, unknown> }, name = "git"): Promise<{ id: string; options: Record<string, unknown> } | string> {
  const repo = join(dirname(sandboxed.root), `bench-repo-${name}`);
  const env = { ...process.env, GIT_AUTHOR_NAME: "b", GIT_AUTHOR_EMAIL: "b@b.invalid", GIT_COMMITTER_NAME: "b", GIT_COMMITTER_EMAIL: "b@b.invalid", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };
  for (const args of [["init", "-q", "-b", "main", repo], ["-C", repo, "commit", "-q", "--allow-empty", "-m", "first"]]) {
    if (Bun.spawnSync(["git", ...args], { env, stdout: "ignore", stderr: "ignore" }).exitCode !== 0) return `git ${args[0]} failed`;
  }
  const id = `${sandboxed.id}-${name}`;
  const input = { workspaceId: id, project: { projectId: "bench", source: { kind: "host-directory", path: repo } }, placement: { kind: "branch", branchName: "bench", baseRef: "main" } };
  const created = Bun.spawnSync([BIN, "create", "--workspace-id", id], { stdin: new TextEncoder().encode(`${JSON.stringify({ protocolVersion: 1, input, options: sandboxed.options })}\n`), stdout: "ignore", stderr: "pipe" });
  return created.exitCode === 0 ? { id, options: sandboxed.options } : `create of a worktree workspace failed: ${created.stderr.toString().trim()}`;
}

/** The cost of a sandboxed workspace's git: /bin/true in a sandboxed worktree beside the same exec in a sandboxed plain directory. */
async function sandboxedGitFigure(options: ExecOptions): Promise<Figure> {
  const title = "exec /bin/true, pipes, sandboxed, in a worktree of a git repository: wall time";
  if (typeof options.sandboxed === "string" || typeof options.sandboxedGit === "string") {
    const reason = typeof options.sandboxed === "string" ? options.sandboxed : (options.sandboxedGit as string);
    return skipped({ id: "exec.pipes.sandboxed-git", family: "exec", title, unit: "ms", better: "lower", reason });
  }
  const [inWorktree, inPlain] = [options.sandboxedGit, options.sandboxed];
  const runs = await alternated(options, () => wallOfTrue(inWorktree), () => wallOfTrue(inPlain));
  const g = summarize(runs.measured);
  const p = summarize(runs.baseline);
  return figure({
    id: "exec.pipes.sandboxed-git",
    family: "exec",
    title,
    unit: "ms",
    better: "lower",
    value: g.p50,
    baseline: { label: "the same sandboxed exec in a plain directory", value: p.p50 },
    detail: `the private git dir's two syncs (nothing changed) add ${(g.p50 - p.p50).toFixed(2)} ms (p50); in the worktree ${fmt(g)}; plain ${fmt(p)}`,
    stats: { trials: options.trials, git: g, plain: p, overheadMsP50: g.p50 - p.p50 },
  });
}

/** bwrap with the namespaces and mounts of every sandbox, starting /bin/true: bubblewrap's own cost. */
function bwrapTrue(): string[] {
  return [sandboxTool(), ...bwrapArguments({ root: null, readWrite: [], readOnly: [], network: "host" }), "--", TRUE];
}

/** The sandbox figures of `mode`: sandboxed exec beside the unsandboxed one of the same run. */
async function sandboxFigures(options: ExecOptions, mode: "pipes" | "pty"): Promise<Figure[]> {
  const title = `exec /bin/true, ${mode}, sandboxed: wall time`;
  if (typeof options.sandboxed === "string") {
    return [skipped({ id: `exec.${mode}.sandboxed`, family: "exec", title, unit: "ms", better: "lower", reason: options.sandboxed })];
  }
  const sandboxed: number[] = [];
  const sandboxedStarted: number[] = [];
  const plain: number[] = [];
  const bwrap: number[] = [];
  for (let i = 0; i < options.warmup + options.trials; i++) {
    const first = i % 2 === 0;
    const p1 = first ? await wrappedTrue(options.workspace, mode) : null;
    const s = await wrappedTrue(options.sandboxed, mode);
    const p2 = first ? null : await wrappedTrue(options.workspace, mode);
    const b = await direct(bwrapTrue());
    if (i < options.warmup) continue;
    sandboxed.push(s.wallMs);
    sandboxedStarted.push(s.startedMs);
    plain.push((p1 ?? p2)!.wallMs);
    bwrap.push(b);
  }
  const s = summarize(sandboxed);
  const p = summarize(plain);
  const b = summarize(bwrap);
  const st = summarize(sandboxedStarted);
  return [
    figure({
      id: `exec.${mode}.sandboxed`,
      family: "exec",
      title,
      unit: "ms",
      better: "lower",
      value: s.p50,
      baseline: { label: "the same exec without the sandbox", value: p.p50 },
      detail: `sandbox adds ${(s.p50 - p.p50).toFixed(2)} ms (p50), of which bwrap alone starting /bin/true takes ${b.p50.toFixed(2)} ms; sandboxed ${fmt(s)}; unsandboxed ${fmt(p)}; spawn → started sandboxed ${fmt(st)}`,
      stats: { trials: options.trials, sandboxed: s, unsandboxed: p, bwrapTrue: b, sandboxedStarted: st, overheadMsP50: s.p50 - p.p50 },
    }),
  ];
}

function childrenOf(pid: number): number[] {
  return listProcesses()
    .filter((p) => p.ppid === pid && p.state !== "Z")
    .map((p) => p.pid);
}

/** VmRSS of the sandbox init (the sandboxed workload's parent) while it holds a long-running workload. */
async function sandboxInitMemory(options: ExecOptions, describePeakMiB: number): Promise<Figure> {
  const title = "sandbox init resident memory, pipes, long-running workload";
  if (typeof options.sandboxed === "string") return skipped({ id: "exec.sandbox-init.rss", family: "exec", title, unit: "MiB", better: "lower", reason: options.sandboxed });
  const stamps = new StampReader();
  const exec = new BenchExec(options.sandboxed.id, envelope(options.sigstamp.argv, { options: options.sandboxed.options, stdio: { kind: "pipes" } }), { onStdout: stamps.feed });
  try {
    await withTimeout(exec.started, RUN_TIMEOUT_MS, "sandboxed exec of sigstamp: started");
    // sigstamp's own pid is one of the sandbox's namespace: find the init on the host instead
    // (wrapper → bwrap → bwrap's init → the sandbox init → sigstamp). The sandbox dies with the wrapper.
    await withTimeout(stamps.ready, RUN_TIMEOUT_MS, "sandboxed sigstamp: ready");
    await sleep(300);
    const [bwrap] = childrenOf(exec.pid);
    const init = childrenOf(childrenOf(bwrap ?? -1)[0] ?? -1)[0];
    if (init === undefined) throw new Error("the sandbox init was not found below the wrapper");
    const memory = memoryOf(init);
    return figure({
      id: "exec.sandbox-init.rss",
      family: "exec",
      title,
      unit: "MiB",
      better: "lower",
      value: memory.rssMiB,
      baseline: { label: "describe peak RSS", value: describePeakMiB },
      detail: `VmRSS ${memory.rssMiB.toFixed(1)} MiB (VmHWM ${memory.peakMiB.toFixed(1)} MiB), of which private (RssAnon) ${memory.anonMiB.toFixed(1)} MiB, for the workload's whole life; the rest is the binary's pages, shared with the wrapper`,
      stats: memory,
    });
  } finally {
    exec.closeStdin();
    await withTimeout(exec.done, RUN_TIMEOUT_MS, "sandboxed sigstamp exec: exit");
  }
}

export async function execFigures(options: ExecOptions): Promise<Figure[]> {
  const figures: Figure[] = [];
  const runs = await withFloors(
    options,
    async (round) => {
      const order = round % 2 === 0 ? (["pipes", "pty"] as const) : (["pty", "pipes"] as const);
      const out: Partial<Record<"pipes" | "pty", { wallMs: number; startedMs: number }>> = {};
      for (const mode of order) out[mode] = await wrappedTrue(options.workspace, mode);
      return out as Record<"pipes" | "pty", { wallMs: number; startedMs: number }>;
    },
    { empty: () => direct([options.empty.path]), true: () => direct([TRUE]) },
  );
  const empty = summarize(runs.empty);
  const floorTrue = summarize(runs.true);
  const floors = { empty: empty.p50, true: floorTrue.p50, trueLabel: "/bin/true spawned directly" };
  const wall = { pipes: summarize(runs.ours.map((r) => r.pipes.wallMs)), pty: summarize(runs.ours.map((r) => r.pty.wallMs)) };
  const started = { pipes: summarize(runs.ours.map((r) => r.pipes.startedMs)), pty: summarize(runs.ours.map((r) => r.pty.startedMs)) };
  const stats = { trials: options.trials, wall, started, empty, direct: floorTrue };
  const budget = 2 * empty.p50 + floorTrue.p50;
  figures.push(
    figure({
      id: "exec.pipes.true",
      family: "exec",
      title: "exec /bin/true, pipes: wall time",
      unit: "ms",
      better: "lower",
      value: wall.pipes.p50,
      baseline: { label: "empty program spawned directly", value: empty.p50 },
      floors,
      aim: { text: "≤ 2× empty + /bin/true", check: ({ value }) => value <= budget },
      detail: `budget 2 × ${empty.p50.toFixed(2)} + ${floorTrue.p50.toFixed(2)} = ${budget.toFixed(2)} ms; over a direct /bin/true ${(wall.pipes.p50 - floorTrue.p50).toFixed(2)} ms (p50); ours ${fmt(wall.pipes)}`,
      stats,
    }),
    figure({
      id: "exec.pipes.started",
      family: "exec",
      title: "exec, pipes: spawn → started",
      unit: "ms",
      better: "lower",
      value: started.pipes.p50,
      baseline: { label: "empty program spawned directly", value: empty.p50 },
      floors,
      aim: { text: "≤ 1.3× empty", check: ({ ratio }) => ratio <= 1.3 },
      detail: `ours ${fmt(started.pipes)}`,
      stats,
    }),
    figure({
      id: "exec.pty.true",
      family: "exec",
      title: "exec /bin/true, PTY: wall time",
      unit: "ms",
      better: "lower",
      value: wall.pty.p50,
      baseline: { label: "the same exec in pipes mode", value: wall.pipes.p50 },
      floors,
      aim: { text: "≤ 1.5× pipes", check: ({ ratio }) => ratio <= 1.5 },
      detail: `ours ${fmt(wall.pty)}`,
      stats,
    }),
    figure({
      id: "exec.pty.started",
      family: "exec",
      title: "exec, PTY: spawn → started",
      unit: "ms",
      better: "lower",
      value: started.pty.p50,
      baseline: { label: "the same in pipes mode", value: started.pipes.p50 },
      floors,
      aim: { text: "≤ 1.5× pipes", check: ({ ratio }) => ratio <= 1.5 },
      detail: `ours ${fmt(started.pty)}`,
      stats,
    }),
  );
  for (const mode of ["pipes", "pty"] as const) figures.push(...(await sandboxFigures(options, mode)));
  figures.push(await sandboxedGitFigure(options));
  const emptyPeak = await medianPeakRssMiB([options.empty.path]);
  const describePeak = await medianPeakRssMiB([BIN, "describe"]);
  if (describePeak !== null) figures.push(await sandboxInitMemory(options, describePeak.median));
  for (const mode of ["pipes", "pty"] as const) {
    const memory = await holdingPeak(options, mode);
    const title = `wrapper peak RSS, ${mode}, long-running workload`;
    if (emptyPeak === null) {
      figures.push({ ...skipped({ id: `exec.${mode}.rss`, family: "exec", title, unit: "MiB", better: "lower", reason: "" }), skipped: undefined, value: memory.peakMiB, note: "no GNU time(1): no baseline", stats: memory });
      continue;
    }
    figures.push(
      figure({
        id: `exec.${mode}.rss`,
        family: "exec",
        title,
        unit: "MiB",
        better: "lower",
        value: memory.peakMiB,
        baseline: { label: "empty program's peak RSS", value: emptyPeak.median },
        aim: { text: "≤ 1.4× empty", check: ({ ratio }) => ratio <= 1.4 },
        detail: `VmHWM ${memory.peakMiB.toFixed(1)} MiB, VmRSS now ${memory.rssMiB.toFixed(1)} MiB (${memory.pss.toFixed(1)} PSS, ${memory.private.toFixed(1)} private); empty ${emptyPeak.runs.map((x) => x.toFixed(1)).join("/")} MiB, describe ${describePeak?.median.toFixed(1) ?? "?"} MiB (GNU time %M)`,
        stats: { ...memory, emptyPeakMiB: emptyPeak.runs, describePeakMiB: describePeak?.runs ?? null },
      }),
    );
  }
  const concurrent = await concurrentFigure(options);
  figures.push(concurrent.figure, await perWrapperFigure(options, concurrent.pssPerWrapperMiB));
  return figures;
}

/** Issue 33's memory aim, per wrapper (`ours`: concurrentFigure's PSS per wrapper), against as many of the least Bun wrapper holding `cat` at once. */
export async function perWrapperFigure(options: Pick<ExecOptions, "forwarder" | "concurrent">, ours: number): Promise<Figure> {
  const floor = await floorMemory(options.forwarder, options.concurrent);
  return figure({
    id: "exec.concurrent.memory-per-wrapper",
    family: "exec",
    title: "PSS per live wrapper, against the least Bun wrapper",
    unit: "MiB",
    better: "lower",
    value: ours,
    baseline: { label: `the least Bun wrapper, ${options.concurrent} at once`, value: floor.pss },
    aim: { text: "≤ 3 MiB (issue 33)", check: ({ value }) => value <= 3 },
    detail: `ours ${ours.toFixed(2)} MiB; the least Bun wrapper (spawn, forward three signals, wait: bench/workloads/bun-forwarder.ts) ${floor.pss.toFixed(2)} MiB PSS, ${floor.private.toFixed(2)} MiB private each: the rest of ours is what it loaded before \`started\` (bench/README.md)`,
    stats: { count: options.concurrent, oursPssMiB: ours, floorPssMiB: floor.pss, floorPrivateMiB: floor.private },
  });
}

/** `count` copies of the least Bun wrapper, each holding `cat`, at once: PSS and private MiB per copy. */
async function floorMemory(forwarder: FloorProgram, count: number): Promise<{ pss: number; private: number }> {
  const runs = Array.from({ length: count }, () => new DirectRun([forwarder.path, "/bin/cat"]));
  try {
    await withTimeout(Promise.all(runs.map((run) => run.running)), 60_000, `${count} least Bun wrappers: running`);
    // As for ours (200 ms after the last `started`), and time for each to spawn its cat.
    await sleep(500);
    const total = liveMemory(runs.map((run) => run.pid), "a least Bun wrapper");
    return { pss: total.pss / count, private: total.private / count };
  } finally {
    // cat reads EOF on the stdin it inherited and ends; its wrapper ends with it.
    for (const run of runs) run.closeStdin();
    await withTimeout(Promise.all(runs.map((run) => run.done)), 60_000, `${count} least Bun wrappers: exit`);
  }
}

/**
 * `count` execs of `cat` (pipes) at once, each holding its workload: the wrappers' memory once
 * every one has said `started`. PSS is the honest total (the binary's pages are shared by all
 * the wrappers and counted once); the sum of RSS counts them once per wrapper. Also returns
 * the PSS per wrapper, for perWrapperFigure.
 */
export async function concurrentFigure(options: Pick<ExecOptions, "workspace" | "concurrent">): Promise<{ figure: Figure; pssPerWrapperMiB: number }> {
  const begin = performance.now();
  const execs = Array.from({ length: options.concurrent }, () => new BenchExec(options.workspace.id, envelope(["/bin/cat"], { options: options.workspace.options })));
  try {
    await withTimeout(Promise.all(execs.map((exec) => exec.started)), 60_000 + options.concurrent * 200, `${options.concurrent} concurrent execs: started`);
    const startMs = performance.now() - begin;
    await sleep(200);
    const total = liveMemory(execs.map((exec) => exec.pid), "a wrapper of the concurrent execs");
    const pssPerWrapperMiB = total.pss / options.concurrent;
    const budgetMiB = 4096;
    const memoryFigure = figure({
      id: "exec.concurrent.memory",
      family: "exec",
      title: `${options.concurrent} concurrent execs holding a workload: wrappers' total PSS`,
      unit: "MiB",
      better: "lower",
      value: total.pss,
      baseline: { label: "the 4 GiB the issue allows", value: budgetMiB },
      aim: { text: "well under 4 GiB (≤ half)", check: ({ ratio }) => ratio <= 0.5 },
      detail: `PSS ${pssPerWrapperMiB.toFixed(1)} MiB per wrapper; private ${total.private.toFixed(0)} MiB in all; RSS summed ${total.rss.toFixed(0)} MiB (shared pages counted once per wrapper); all started ${startMs.toFixed(0)} ms after the first spawn`,
      stats: { count: options.concurrent, pssMiB: total.pss, privateMiB: total.private, rssSumMiB: total.rss, startMs },
    });
    return { figure: memoryFigure, pssPerWrapperMiB };
  } finally {
    for (const exec of execs) exec.closeStdin();
    await withTimeout(Promise.all(execs.map((exec) => exec.done)), 60_000, `${options.concurrent} concurrent execs: exit`);
    for (const exec of execs) exec.closeControls();
  }
}
