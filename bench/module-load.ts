#!/usr/bin/env bun
/**
 * `bun bench/module-load.ts OLD NEW [ROUNDS] [COMMAND WORDS...]`: what a change to a command's
 * modules buys, alternated against the previous binary (bench/README.md, "Trimming each
 * command's modules"). Each round runs OLD and NEW once (their order alternating), traced
 * (src/trace.ts), and keeps the time from the `main` mark to `command loaded`: the import() of
 * the command's chunk and everything it imports, nothing else. Prints each binary's median,
 * the difference, and the wall times' for context.
 *
 * The default command, `exec --workspace-id x` with no fd 3, loads exec's chunk and then stops
 * at its usage error: no store, no cgroup, no spawn, so 300 rounds resolve ~0.05 ms where a
 * whole exec's own noise is milliseconds. `inspect --workspace-id x` loads inspect's modules and
 * stops at the request ({} on stdin, a pipe: an empty input would be /dev/null, a character
 * device, and load node:tty). Run an A/A (the same binary twice) first to see this machine's noise.
 * Since 08dc062 `main` is marked before the command table (src/dispatch.ts) loads, so the span
 * holds the table too (~1 ms): compare binaries on the same side of that commit, or the walls.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { alternated, median } from "./stats.ts";
import { cleanupAll, tempDir } from "./procs.ts";

const [oldBin, newBin, roundsArg, ...words] = process.argv.slice(2);
if (!oldBin || !newBin) {
  console.error("usage: bun bench/module-load.ts OLD NEW [ROUNDS] [COMMAND WORDS...]");
  process.exit(2);
}
const rounds = Number(roundsArg ?? 300);
const args = words.length > 0 ? words : ["exec", "--workspace-id", "x"];
const WARMUP = 5;
const trace = join(tempDir("phr-module-load-"), "trace.jsonl");
const env = { ...process.env, PASEO_HOST_RUNTIME_TRACE: trace };

/** One traced run: [main -> command loaded, wall], in ms. */
function run(bin: string): [number, number] {
  writeFileSync(trace, "");
  const started = performance.now();
  spawnSync(bin, args, { env, input: "{}\n", stdio: ["pipe", "ignore", "ignore"] });
  const wall = performance.now() - started;
  const line = readFileSync(trace, "utf8").split("\n").find(Boolean);
  if (!line) throw new Error(`${bin} wrote no trace (built before src/trace.ts?)`);
  const marks = new Map<string, number>(JSON.parse(line).marks);
  const loaded = marks.get("command loaded");
  if (loaded === undefined) throw new Error(`${bin} ${args.join(" ")}: no "command loaded" mark (not a command that loads a chunk?)`);
  return [loaded - marks.get("main")!, wall];
}

let runs: { measured: [number, number][]; baseline: [number, number][] };
try {
  runs = await alternated({ warmup: WARMUP, trials: rounds }, () => run(newBin), () => run(oldBin));
} finally {
  cleanupAll();
}
const load = { old: runs.baseline.map(([ms]) => ms), new: runs.measured.map(([ms]) => ms) };
const wall = { old: runs.baseline.map(([, ms]) => ms), new: runs.measured.map(([, ms]) => ms) };
const show = (values: { old: number[]; new: number[] }) =>
  `old ${median(values.old).toFixed(3)}, new ${median(values.new).toFixed(3)}, difference ${(median(values.new) - median(values.old)).toFixed(3)} ms`;
console.log(`${args.join(" ")}, ${rounds} alternated rounds (p50)`);
console.log(`  main -> command loaded: ${show(load)}`);
console.log(`  wall:                   ${show(wall)}`);
