/**
 * The floors every process-level figure is reported against, measured in the same run:
 * - the empty program: an empty source file compiled with exactly the release build's flags
 *   (release/compile.ts), i.e. what any call of a Bun binary built this way costs before one
 *   line of ours runs — the floor of this stack, and the baseline of issue 14's aims;
 * - `/bin/true`: the floor of any process on this machine;
 * - the least Bun wrapper (bench/workloads/bun-forwarder.ts, the same flags): the engine's part
 *   of signal forwarding and of a live wrapper's memory.
 * Trials rotate ours, the empty program and /bin/true, so a load spike hits all three.
 */
import { existsSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { HARDENING_FLAGS, SPEED_FLAGS } from "../release/compile.ts";
import { tempDir } from "./procs.ts";
import { median } from "./stats.ts";

/** A program compiled with the release flags as a floor of the figures. */
export interface FloorProgram {
  path: string;
  /** The exact `bun build` flags it was compiled with (the release build's). */
  flags: string[];
  buildMs: number;
}

/** Compiles an empty file with the release flags into the bench's temp dir. */
export function compileEmptyProgram(): FloorProgram {
  const entry = join(tempDir("phr-bench-empty-"), "empty.ts");
  writeFileSync(entry, "");
  return compileWithReleaseFlags(entry, "the empty program");
}

/** The least Bun wrapper (bench/workloads/bun-forwarder.ts), compiled with the release flags. */
export function compileBunForwarder(): FloorProgram {
  return compileWithReleaseFlags(join(import.meta.dir, "workloads", "bun-forwarder.ts"), "the least Bun wrapper");
}

function compileWithReleaseFlags(entry: string, what: string): FloorProgram {
  const path = join(tempDir("phr-bench-floor-"), basename(entry, ".ts"));
  const flags = ["--compile", ...HARDENING_FLAGS, ...SPEED_FLAGS];
  const begin = performance.now();
  const result = Bun.spawnSync([process.execPath, "build", ...flags, entry, "--outfile", path], { stdout: "ignore", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`compiling ${what} failed: ${result.stderr.toString()}`);
  return { path, flags, buildMs: Math.round(performance.now() - begin) };
}

export interface Rounds {
  warmup: number;
  trials: number;
}

/** What `withFloors` collected: ours, and the two floors measured in the same rounds. */
export interface FloorRuns<T> {
  ours: T[];
  empty: number[];
  true: number[];
}

/**
 * Runs `ours`, the empty program and /bin/true once per round, in an order that rotates every
 * round; the warm-up rounds are dropped. `floor` times one run of each the same way `ours` is
 * driven (same API, same stdin), so their difference is our own work.
 */
export async function withFloors<T>(rounds: Rounds, ours: (round: number) => Promise<T>, floor: { empty: () => Promise<number>; true: () => Promise<number> }): Promise<FloorRuns<T>> {
  const out: FloorRuns<T> = { ours: [], empty: [], true: [] };
  for (let round = 0; round < rounds.warmup + rounds.trials; round++) {
    let mine: T | undefined;
    let empty = Number.NaN;
    let floorTrue = Number.NaN;
    const steps = [async () => (mine = await ours(round)), async () => (empty = await floor.empty()), async () => (floorTrue = await floor.true())];
    for (let k = 0; k < steps.length; k++) await steps[(round + k) % steps.length]!();
    if (round < rounds.warmup) continue;
    out.ours.push(mine as T);
    out.empty.push(empty);
    out.true.push(floorTrue);
  }
  return out;
}

/**
 * Peak RSS (MiB) of one run of `argv`, from GNU time's %M (its child's ru_maxrss), or null
 * without GNU time. Bun's resourceUsage().maxRSS is not used: a child forked from this large
 * process reports the parent's RSS from before exec.
 */
export async function peakRssMiB(argv: string[], stdin = ""): Promise<number | null> {
  const time = ["/usr/bin/time", "/bin/time"].find((path) => existsSync(path));
  if (!time) return null;
  const proc = Bun.spawn([time, "-f", "%M", ...argv], { stdout: "ignore", stderr: "pipe", stdin: new TextEncoder().encode(stdin) });
  const text = await new Response(proc.stderr).text();
  await proc.exited;
  const kib = Number(text.trim().split("\n").at(-1));
  return Number.isFinite(kib) && kib > 0 ? kib / 1024 : null;
}

/** The median peak RSS of `runs` runs of `argv` (null without GNU time). */
export async function medianPeakRssMiB(argv: string[], runs = 5, stdin = ""): Promise<{ median: number; runs: number[] } | null> {
  const peaks: number[] = [];
  for (let i = 0; i < runs; i++) {
    const peak = await peakRssMiB(argv, stdin);
    if (peak === null) return null;
    peaks.push(peak);
  }
  return { median: median(peaks), runs: peaks };
}
