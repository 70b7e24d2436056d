/**
 * Figure 2: signal-forwarding latency. The time from the bench's CLOCK_MONOTONIC reading just
 * before `kill(wrapper, SIG)` (pipes) or before writing a `signal` frame on fd 3 (PTY) to the
 * CLOCK_MONOTONIC reading the workload takes first thing in its signal handler.
 * Baseline: the same workload spawned directly and signalled with kill(pid) — the floor of
 * signal delivery plus handler scheduling on this machine. Trials alternate between the wrapped
 * and the direct workload, so load changes hit both. Aim (issue 26, forwarding through the
 * event loop in every mode): p50 ≤ 3× and p99 ≤ 4× direct delivery, pipes and PTY.
 */
import { constants } from "node:os";
import { monotonicNs, msBetween } from "./clock.ts";
import { BenchExec, DirectRun, describeFailure, envelope } from "./driver.ts";
import { sleep, trackWorkload, withTimeout } from "./procs.ts";
import { figure, type Figure } from "./report.ts";
import { seededRandom, summarize, type Summary } from "./stats.ts";
import { StampReader, type Sigstamp } from "./workloads.ts";

export interface SignalOptions {
  trials: number;
  warmup: number;
  workspace: { id: string; options: Record<string, unknown> };
  sigstamp: Sigstamp;
}

const TRIAL_TIMEOUT_MS = 2000;

interface Target {
  label: string;
  send(signal: NodeJS.Signals): void;
  stamps: StampReader;
}

/** One trial: latency in ms, or null when the stamp did not come (or came for another signal). */
async function trial(target: Target, signal: NodeJS.Signals): Promise<number | null> {
  const stamp = target.stamps.next();
  const before = monotonicNs();
  target.send(signal);
  try {
    const got = await withTimeout(stamp, TRIAL_TIMEOUT_MS, `${target.label} ${signal}`);
    // A stamp from an earlier, timed-out trial, or for another signal, is not this trial's.
    if (got.signo !== constants.signals[signal] || got.ns < before) return null;
    return msBetween(before, got.ns);
  } catch {
    target.stamps.drain();
    return null;
  }
}

function fmt(s: Summary): string {
  return `p50 ${s.p50.toFixed(3)} / p90 ${s.p90.toFixed(3)} / p99 ${s.p99.toFixed(3)} / max ${s.max.toFixed(2)} ms`;
}

async function compare(wrapped: Target, direct: Target, signal: NodeJS.Signals, options: SignalOptions) {
  const random = seededRandom(7);
  const samples = { wrapped: [] as number[], direct: [] as number[], lost: 0 };
  for (let i = 0; i < options.warmup + options.trials; i++) {
    const order = i % 2 === 0 ? [wrapped, direct] : [direct, wrapped];
    for (const target of order) {
      const ms = await trial(target, signal);
      await sleep(1 + random() * 2);
      if (i < options.warmup) continue;
      if (ms === null) samples.lost++;
      else (target === wrapped ? samples.wrapped : samples.direct).push(ms);
    }
  }
  return { wrapped: summarize(samples.wrapped), direct: summarize(samples.direct), lost: samples.lost };
}

function signalFigure(id: string, title: string, result: Awaited<ReturnType<typeof compare>>, options: SignalOptions, note?: string): Figure {
  return figure({
    id,
    family: "signals",
    title,
    unit: "ms",
    better: "lower",
    value: result.wrapped.p99,
    baseline: { label: "direct kill(pid), p99", value: result.direct.p99 },
    aim: { text: "p50 ≤ 3×, p99 ≤ 4× direct", check: ({ ratio }) => ratio <= 4 && result.wrapped.p50 <= 3 * result.direct.p50 },
    detail: `p50 ${(result.wrapped.p50 / result.direct.p50).toFixed(2)}× direct, p99 ${(result.wrapped.p99 / result.direct.p99).toFixed(2)}×; ours ${fmt(result.wrapped)}; direct ${fmt(result.direct)}${result.lost ? `; ${result.lost} trials lost` : ""}`,
    stats: { trials: options.trials, wrapped: result.wrapped, direct: result.direct, lost: result.lost, workload: options.sigstamp.kind },
    note,
  });
}

/** Starts sigstamp under the wrapper (pipes or PTY) and waits until its handlers are installed. */
async function startWrapped(options: SignalOptions, mode: "pipes" | "pty"): Promise<{ exec: BenchExec; stamps: StampReader }> {
  const stamps = new StampReader();
  const stdio = mode === "pty" ? { kind: "pty", rows: 24, cols: 80 } : { kind: "pipes" };
  const exec = new BenchExec(options.workspace.id, envelope(options.sigstamp.argv, { options: options.workspace.options, stdio }), {
    keepControls: mode === "pty",
    onStdout: stamps.feed,
  });
  await withTimeout(exec.started, 10_000, `${mode} exec of sigstamp: started`);
  trackWorkload(await withTimeout(stamps.ready, 10_000, `${mode} sigstamp: ready`));
  return { exec, stamps };
}

async function startDirect(options: SignalOptions): Promise<{ run: DirectRun; stamps: StampReader }> {
  const stamps = new StampReader();
  const run = new DirectRun(options.sigstamp.argv, { onStdout: stamps.feed });
  await withTimeout(stamps.ready, 10_000, "direct sigstamp: ready");
  return { run, stamps };
}

async function finish(exec: BenchExec, label: string): Promise<void> {
  exec.child.stdin!.end();
  const done = await withTimeout(exec.done, 10_000, `${label}: exit`);
  exec.closeControls();
  const failure = describeFailure(done);
  if (failure) throw new Error(`${label}: ${failure}`);
}

export async function signalFigures(options: SignalOptions): Promise<Figure[]> {
  const figures: Figure[] = [];
  const direct = await startDirect(options);
  const directTarget: Target = { label: "direct", stamps: direct.stamps, send: (signal) => process.kill(direct.run.pid, signal) };
  try {
    const pipes = await startWrapped(options, "pipes");
    const pipesTarget: Target = { label: "pipes wrapper", stamps: pipes.stamps, send: (signal) => process.kill(pipes.exec.pid, signal) };
    for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
      const result = await compare(pipesTarget, directTarget, signal, options);
      figures.push(signalFigure(`signals.pipes.${signal}`, `pipes: kill(wrapper, ${signal})`, result, options, signal === "SIGTERM" ? options.sigstamp.note : undefined));
    }
    await finish(pipes.exec, "pipes sigstamp exec");

    const pty = await startWrapped(options, "pty");
    const frame = (signal: string) => `${JSON.stringify({ type: "signal", protocolVersion: 1, signal })}\n`;
    const ptyTarget: Target = { label: "PTY wrapper", stamps: pty.stamps, send: (signal) => pty.exec.sendControl(frame(signal)) };
    const result = await compare(ptyTarget, directTarget, "SIGTERM", options);
    figures.push(
      signalFigure("signals.pty.SIGTERM", "PTY: signal frame SIGTERM on fd 3", result, options, "includes the bench's own socket write of the frame (the daemon pays it too)"),
    );
    await finish(pty.exec, "PTY sigstamp exec");
  } finally {
    direct.run.closeStdin();
    await withTimeout(direct.run.done, 5000, "direct sigstamp: exit").catch(() => direct.run.child.kill("SIGKILL"));
  }
  return figures;
}
