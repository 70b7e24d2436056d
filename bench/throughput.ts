/**
 * Figure 5: throughput of the workload's stdout as the daemon reads it (node:child_process
 * stream, bytes counted and dropped). `head -c N /dev/zero`:
 * - pipes mode through the wrapper vs the same command spawned directly (the wrapper hands the
 *   daemon's pipe to the workload, so this should be the same speed);
 * - PTY mode through the wrapper vs `script -q -e -c …` (util-linux; skipped when absent),
 *   the reference for "a PTY relay".
 * The rate is taken from the first to the last stdout chunk, so it measures streaming, not
 * start-up (figure 3 covers that); the rate over the whole run, spawn to exit, is in the details.
 * Runs alternate; the median run is reported.
 */
import { msBetween } from "./clock.ts";
import { BenchExec, DirectRun, describeFailure, envelope, type Done } from "./driver.ts";
import { withTimeout } from "./procs.ts";
import { figure, skipped, type Figure } from "./report.ts";
import { median } from "./stats.ts";

export interface ThroughputOptions {
  pipesBytes: number;
  ptyBytes: number;
  runs: number;
  workspace: { id: string; options: Record<string, unknown> };
}

const RUN_TIMEOUT_MS = 120_000;
const MiB = 2 ** 20;

function headArgv(bytes: number): string[] {
  const head = Bun.which("head");
  if (!head) throw new Error("head(1) not found");
  return [head, "-c", String(bytes), "/dev/zero"];
}

/** MiB/s while streaming (first to last chunk) and over the whole run (spawn to exit). */
interface Rate {
  streaming: number;
  whole: number;
}

function rateOf(bytes: number, spawnedAt: bigint, done: Done): Rate {
  const mib = bytes / MiB;
  const streamingMs = done.firstByteAt !== null && done.lastByteAt !== null ? msBetween(done.firstByteAt, done.lastByteAt) : Number.NaN;
  return { streaming: mib / (streamingMs / 1000), whole: mib / (msBetween(spawnedAt, done.endedAt) / 1000) };
}

async function wrapped(options: ThroughputOptions, mode: "pipes" | "pty", bytes: number): Promise<Rate> {
  const stdio = mode === "pty" ? { kind: "pty", rows: 24, cols: 80 } : { kind: "pipes" };
  const exec = new BenchExec(options.workspace.id, envelope(headArgv(bytes), { options: options.workspace.options, stdio }), { keepControls: mode === "pty" });
  exec.closeStdin();
  const done = await withTimeout(exec.done, RUN_TIMEOUT_MS, `${mode} exec of head`);
  exec.closeControls();
  const failure = describeFailure(done);
  if (failure) throw new Error(`${mode} exec of head: ${failure}`);
  if (done.stdoutBytes !== bytes) throw new Error(`${mode} exec of head: ${done.stdoutBytes} bytes on stdout, expected ${bytes}`);
  return rateOf(bytes, exec.spawnedAt, done);
}

async function direct(argv: string[], bytes: number): Promise<Rate> {
  const run = new DirectRun(argv);
  run.closeStdin();
  const done = await withTimeout(run.done, RUN_TIMEOUT_MS, argv.join(" "));
  if (done.code !== 0) throw new Error(`${argv.join(" ")} exited ${done.code ?? done.signal}: ${done.stderr}`);
  if (done.stdoutBytes !== bytes) throw new Error(`${argv.join(" ")}: ${done.stdoutBytes} bytes on stdout, expected ${bytes}`);
  return rateOf(bytes, run.spawnedAt, done);
}

async function alternate(runs: number, ours: () => Promise<Rate>, theirs: () => Promise<Rate>) {
  const a: Rate[] = [];
  const b: Rate[] = [];
  for (let i = 0; i < runs; i++) {
    if (i % 2 === 0) {
      b.push(await theirs());
      a.push(await ours());
    } else {
      a.push(await ours());
      b.push(await theirs());
    }
  }
  return { ours: a, theirs: b };
}

const list = (xs: Rate[], key: keyof Rate) => xs.map((x) => x[key].toFixed(0)).join(", ");
const medianOf = (xs: Rate[], key: keyof Rate) => median(xs.map((x) => x[key]));

export async function throughputFigures(options: ThroughputOptions): Promise<Figure[]> {
  const figures: Figure[] = [];
  const pipes = await alternate(
    options.runs,
    () => wrapped(options, "pipes", options.pipesBytes),
    () => direct(headArgv(options.pipesBytes), options.pipesBytes),
  );
  figures.push(
    figure({
      id: "throughput.pipes",
      family: "throughput",
      title: `pipes: ${options.pipesBytes / MiB} MiB on stdout`,
      unit: "MiB/s",
      better: "higher",
      value: medianOf(pipes.ours, "streaming"),
      baseline: { label: "head spawned directly", value: medianOf(pipes.theirs, "streaming") },
      aim: { text: "≥ 0.95× direct", check: ({ ratio }) => ratio >= 0.95 },
      detail: `streaming runs ours ${list(pipes.ours, "streaming")}, direct ${list(pipes.theirs, "streaming")} MiB/s; spawn→exit ours ${list(pipes.ours, "whole")}, direct ${list(pipes.theirs, "whole")} MiB/s`,
      stats: { bytes: options.pipesBytes, runs: pipes },
    }),
  );
  const script = Bun.which("script");
  const ptyTitle = `PTY: ${options.ptyBytes / MiB} MiB on stdout`;
  if (!script) {
    figures.push(skipped({ id: "throughput.pty", family: "throughput", title: ptyTitle, unit: "MiB/s", better: "higher", reason: "script(1) is not installed: no PTY reference" }));
    return figures;
  }
  const scriptArgv = [script, "-q", "-e", "-c", headArgv(options.ptyBytes).join(" "), "/dev/null"];
  const pty = await alternate(
    options.runs,
    () => wrapped(options, "pty", options.ptyBytes),
    () => direct(scriptArgv, options.ptyBytes),
  );
  figures.push(
    figure({
      id: "throughput.pty",
      family: "throughput",
      title: ptyTitle,
      unit: "MiB/s",
      better: "higher",
      value: medianOf(pty.ours, "streaming"),
      baseline: { label: "script -q -c head", value: medianOf(pty.theirs, "streaming") },
      aim: { text: "≥ 0.8× script(1)", check: ({ ratio }) => ratio >= 0.8 },
      detail: `streaming runs ours ${list(pty.ours, "streaming")}, script ${list(pty.theirs, "streaming")} MiB/s; spawn→exit ours ${list(pty.ours, "whole")}, script ${list(pty.theirs, "whole")} MiB/s`,
      stats: { bytes: options.ptyBytes, runs: pty },
    }),
  );
  return figures;
}
