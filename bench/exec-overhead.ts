/**
 * Figure 3: what going through `exec` costs a workload.
 * - Wall time of `/bin/true` through the wrapper (pipes, PTY) from spawn() to exit + every
 *   stream at EOF, vs spawning `/bin/true` directly through the same API (three pipes).
 * - Time from spawn() to the `started` event, vs the same direct `/bin/true` wall time.
 * - Peak RSS (VmHWM) of a wrapper holding a long-running workload, vs the peak RSS of the same
 *   binary running `describe` (its start-up floor).
 * - With the sandbox (isolation "sandbox", when bwrap is installed): the same wall time and
 *   spawn → started, beside the unsandboxed exec of the same run (trials alternate the two), and
 *   bwrap alone starting /bin/true with the same namespaces (what bubblewrap itself costs, the
 *   rest is the in-sandbox init); the resident memory of the sandbox init while it holds a workload.
 * Trials alternate wrapped and direct runs.
 */
import { existsSync, readFileSync } from "node:fs";
import { msBetween } from "./clock.ts";
import { BenchExec, DirectRun, describeFailure, envelope } from "./driver.ts";
import { BIN, sleep, trackWorkload, withTimeout } from "./procs.ts";
import { figure, skipped, type Figure } from "./report.ts";
import { median, summarize, type Summary } from "./stats.ts";
import { StampReader, type Sigstamp } from "./workloads.ts";
import { listProcesses } from "../src/platform/process.ts";
import { bwrapArguments, sandboxTool } from "../src/platform/sandbox.ts";

export interface ExecOptions {
  trials: number;
  warmup: number;
  workspace: { id: string; options: Record<string, unknown> };
  /** The same kind of workspace under isolation "sandbox"; null when bwrap is missing (why, then). */
  sandboxed: { id: string; options: Record<string, unknown> } | string;
  sigstamp: Sigstamp;
}

const TRUE = "/bin/true";
const RUN_TIMEOUT_MS = 10_000;

async function wrappedTrue(options: ExecOptions, mode: "pipes" | "pty", workspace = options.workspace): Promise<{ wallMs: number; startedMs: number }> {
  const stdio = mode === "pty" ? { kind: "pty", rows: 24, cols: 80 } : { kind: "pipes" };
  const exec = new BenchExec(workspace.id, envelope([TRUE], { options: workspace.options, stdio }), { keepControls: mode === "pty" });
  exec.closeStdin();
  const done = await withTimeout(exec.done, RUN_TIMEOUT_MS, `${mode} exec of ${TRUE}`);
  exec.closeControls();
  const failure = describeFailure(done);
  if (failure) throw new Error(`${mode} exec of ${TRUE}: ${failure}`);
  return { wallMs: msBetween(exec.spawnedAt, done.endedAt), startedMs: msBetween(exec.spawnedAt, await exec.started) };
}

async function directTrue(argv: string[] = [TRUE]): Promise<number> {
  const run = new DirectRun(argv);
  run.closeStdin();
  const done = await withTimeout(run.done, RUN_TIMEOUT_MS, `direct ${TRUE}`);
  if (done.code !== 0) throw new Error(`direct ${TRUE} exited ${done.code ?? done.signal}`);
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

/**
 * Peak RSS of `describe`, from GNU time's %M (its child's ru_maxrss). Bun's own
 * resourceUsage().maxRSS is not used: a child forked from this large process reports the
 * parent's RSS from before exec.
 */
async function describePeakMiB(): Promise<number | null> {
  const time = ["/usr/bin/time", "/bin/time"].find((path) => existsSync(path));
  if (!time) return null;
  const proc = Bun.spawn([time, "-f", "%M", BIN, "describe"], { stdout: "ignore", stderr: "pipe", stdin: "ignore" });
  const text = await new Response(proc.stderr).text();
  await proc.exited;
  const kib = Number(text.trim().split("\n").at(-1));
  return Number.isFinite(kib) && kib > 0 ? kib / 1024 : null;
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
    return memoryOf(exec.pid);
  } finally {
    exec.closeStdin();
    await withTimeout(exec.done, RUN_TIMEOUT_MS, `${mode} sigstamp exec: exit`);
    exec.closeControls();
  }
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
    const p1 = first ? await wrappedTrue(options, mode) : null;
    const s = await wrappedTrue(options, mode, options.sandboxed);
    const p2 = first ? null : await wrappedTrue(options, mode);
    const b = await directTrue(bwrapTrue());
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
async function sandboxInitMemory(options: ExecOptions, describePeaks: number[]): Promise<Figure> {
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
      baseline: { label: "describe peak RSS", value: median(describePeaks) },
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
  for (const mode of ["pipes", "pty"] as const) {
    const wall: number[] = [];
    const started: number[] = [];
    const direct: number[] = [];
    for (let i = 0; i < options.warmup + options.trials; i++) {
      const first = i % 2 === 0;
      const d1 = first ? await directTrue() : null;
      const w = await wrappedTrue(options, mode);
      const d2 = first ? null : await directTrue();
      if (i < options.warmup) continue;
      wall.push(w.wallMs);
      started.push(w.startedMs);
      direct.push((d1 ?? d2)!);
    }
    const w = summarize(wall);
    const s = summarize(started);
    const d = summarize(direct);
    figures.push(
      figure({
        id: `exec.${mode}.true`,
        family: "exec",
        title: `exec /bin/true, ${mode}: wall time`,
        unit: "ms",
        better: "lower",
        value: w.p50,
        baseline: { label: "/bin/true spawned directly", value: d.p50 },
        aim: { text: "overhead < 3 ms", check: ({ value, baseline }) => value - baseline < 3 },
        detail: `overhead ${(w.p50 - d.p50).toFixed(2)} ms (p50); ours ${fmt(w)}; direct ${fmt(d)}`,
        stats: { trials: options.trials, wrapped: w, direct: d, overheadMsP50: w.p50 - d.p50 },
      }),
      figure({
        id: `exec.${mode}.started`,
        family: "exec",
        title: `exec, ${mode}: spawn → started`,
        unit: "ms",
        better: "lower",
        value: s.p50,
        baseline: { label: "/bin/true spawned directly", value: d.p50 },
        detail: `ours ${fmt(s)}`,
        stats: { trials: options.trials, started: s, direct: d },
      }),
    );
  }
  for (const mode of ["pipes", "pty"] as const) figures.push(...(await sandboxFigures(options, mode)));
  const describePeaks: number[] = [];
  for (let i = 0; i < 5; i++) {
    const peak = await describePeakMiB();
    if (peak !== null) describePeaks.push(peak);
  }
  if (describePeaks.length > 0) figures.push(await sandboxInitMemory(options, describePeaks));
  for (const mode of ["pipes", "pty"] as const) {
    const memory = await holdingPeak(options, mode);
    const title = `wrapper peak RSS, ${mode}, long-running workload`;
    if (describePeaks.length === 0) {
      figures.push({ ...skipped({ id: `exec.${mode}.rss`, family: "exec", title, unit: "MiB", better: "lower", reason: "" }), skipped: undefined, value: memory.peakMiB, note: "no GNU time(1): no describe baseline", stats: memory });
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
        baseline: { label: "describe peak RSS", value: median(describePeaks) },
        detail: `VmHWM ${memory.peakMiB.toFixed(1)} MiB, VmRSS now ${memory.rssMiB.toFixed(1)} MiB; describe ${describePeaks.map((x) => x.toFixed(1)).join("/")} MiB (GNU time %M)`,
        stats: { ...memory, describePeakMiB: describePeaks },
      }),
    );
  }
  return figures;
}
