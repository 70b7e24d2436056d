#!/usr/bin/env bun
/**
 * `npm run bench [-- --quick] [-- --only=parser,signals,exec,lifecycle,throughput,remote,containment,peer,click,breakdown,git,network]`
 *
 * Runs every figure family against dist/paseo-host-runtime (build it first: `npm run build`),
 * prints one table and writes bench/results/latest.json. `--quick` (CI) trims trial counts and
 * the PTY payload and finishes in under two minutes on 2 cores. Every process-level figure is
 * also reported against the empty program (an empty file compiled with the release flags,
 * built at the start of the run) and /bin/true. `PASEO_BENCH_PEER=/path/to/runtime` adds the
 * comparison with a peer runtime. See bench/README.md.
 */
import { statSync } from "node:fs";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { readyWorkspace } from "../kit/workspace.ts";
import { checkHrtime } from "./clock.ts";
import { execFigures, gitWorktreeWorkspace } from "./exec-overhead.ts";
import { lifecycleFigures } from "./lifecycle.ts";
import { parserFigures } from "./parser.ts";
import { BIN, ROOT, cleanupAll, onCleanup } from "./procs.ts";
import { machineInfo, renderTable, writeResults, type Family, type Figure } from "./report.ts";
import { signalFigures } from "./signals.ts";
import { throughputFigures } from "./throughput.ts";
import { remoteFigures } from "./remote.ts";
import { containmentFigures } from "./containment.ts";
import { buildSigstamp } from "./workloads.ts";
import { compileBunForwarder, compileEmptyProgram } from "./floor.ts";
import { peerFigures } from "./peer.ts";
import { clickFigures } from "./click.ts";
import { breakdown, renderBreakdown, type CallBreakdown } from "./breakdown.ts";
import { floodFigures } from "./git-flood.ts";
import { networkFigures } from "./network.ts";

const FAMILIES: Family[] = ["parser", "signals", "exec", "lifecycle", "throughput", "remote", "containment", "peer", "click", "breakdown", "git", "network"];
const MiB = 2 ** 20;

/** Trial counts: the minimums in quick mode, more in a full run. */
function settings(quick: boolean) {
  return {
    parser: { frames: 10_000, minCpuMs: quick ? 150 : 500, rounds: quick ? 2 : 3 },
    signals: { trials: quick ? 300 : 1000, warmup: quick ? 20 : 50 },
    exec: { trials: quick ? 20 : 100, warmup: quick ? 3 : 5, concurrent: 200 },
    containment: { trials: quick ? 20 : 60, warmup: quick ? 3 : 5, minCpuMs: quick ? 100 : 300 },
    lifecycle: { trials: quick ? 20 : 100, warmup: quick ? 3 : 5, manyWorkspaces: 1000 },
    throughput: { pipesBytes: 256 * MiB, ptyBytes: (quick ? 32 : 256) * MiB, runs: quick ? 5 : 9 },
    remote: { trials: quick ? 6 : 16, warmup: 2, throughputBytes: (quick ? 16 : 64) * MiB },
    peer: { trials: quick ? 8 : 30, warmup: 2 },
    click: { trials: quick ? 8 : 40, warmup: quick ? 1 : 3 },
    breakdown: { trials: quick ? 10 : 30, warmup: 2 },
    git: { refs: quick ? 2000 : 10_000 },
    network: { trials: quick ? 20 : 60, warmup: quick ? 3 : 5, throughputBytes: (quick ? 128 : 512) * MiB, runs: quick ? 3 : 7 },
  };
}

function parseFlags(argv: string[]) {
  let quick = false;
  let only: Family[] = FAMILIES;
  let out = join(ROOT, "bench", "results", "latest.json");
  for (const arg of argv) {
    if (arg === "--quick") quick = true;
    else if (arg.startsWith("--only=")) {
      only = arg.slice("--only=".length).split(",") as Family[];
      const unknown = only.filter((f) => !FAMILIES.includes(f));
      if (unknown.length) throw new Error(`unknown family ${unknown.join(", ")}; choose from ${FAMILIES.join(", ")}`);
    } else if (arg.startsWith("--out=")) out = arg.slice("--out=".length);
    else throw new Error(`unknown argument ${JSON.stringify(arg)} (use --quick, --only=…, --out=…)`);
  }
  return { quick, only, out };
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build\` first`);
  const machine = machineInfo(ROOT, BIN);
  if (machine.binary?.olderThanSrc) console.error(`bench: warning: ${BIN} is older than src/ — run \`npm run build\` to measure the current code`);
  const config = settings(flags.quick);
  const clock = checkHrtime();
  const sigstamp = buildSigstamp();
  const empty = compileEmptyProgram();
  const forwarder = compileBunForwarder();
  const peer = process.env.PASEO_BENCH_PEER || null;
  const started = performance.now();
  const figures: Figure[] = [];
  let phases: { calls: CallBreakdown[]; sandboxSkipped: string | null } | null = null;
  let workspace: Awaited<ReturnType<typeof readyWorkspace>> | undefined;
  const needWorkspace = async () => {
    if (!workspace) {
      workspace = await readyWorkspace("bench");
      onCleanup(workspace.cleanup);
    }
    return workspace;
  };
  /**
   * A workspace under isolation "sandbox" named after `prefix`, with `extra` options (the
   * network allowlist's figures pin their policy to it), or why there is none.
   */
  const sandboxedWorkspace = async (prefix = "bench-sandbox", extra: Record<string, unknown> = {}) => {
    if (!Bun.which("bwrap")) return "bwrap not on PATH (apt-get install bubblewrap)";
    const sandboxed = await readyWorkspace(prefix, "seed", { isolation: "sandbox", ...extra });
    onCleanup(sandboxed.cleanup);
    return sandboxed;
  };
  /** A sandboxed worktree of a git repository (its private git dir synced at every exec), or why there is none. */
  const sandboxedGitWorkspace = async () => {
    const plain = await sandboxedWorkspace();
    if (typeof plain === "string") return plain;
    return await gitWorktreeWorkspace(plain);
  };
  for (const family of flags.only) {
    const begin = performance.now();
    console.error(`bench: ${family}…`);
    try {
      if (family === "parser") figures.push(...(await parserFigures(config.parser)));
      if (family === "signals") figures.push(...(await signalFigures({ ...config.signals, workspace: await needWorkspace(), sigstamp, forwarder })));
      if (family === "exec") figures.push(...(await execFigures({ ...config.exec, workspace: await needWorkspace(), sandboxed: await sandboxedWorkspace(), sandboxedGit: await sandboxedGitWorkspace(), sigstamp, empty, forwarder })));
      if (family === "lifecycle") figures.push(...(await lifecycleFigures({ ...config.lifecycle, empty })));
      if (family === "remote") figures.push(...(await remoteFigures(config.remote)));
      if (family === "containment") figures.push(...(await containmentFigures({ ...config.containment, workspace: await needWorkspace(), empty })));
      if (family === "peer") {
        if (peer) figures.push(...(await peerFigures({ ...config.peer, peer })));
        else console.error("bench: peer: PASEO_BENCH_PEER is not set, figures omitted");
      }
      if (family === "click") figures.push(...(await clickFigures({ ...config.click, workspace: await needWorkspace(), sandboxed: await sandboxedWorkspace() })));
      if (family === "breakdown") {
        const sandboxed = await sandboxedWorkspace();
        phases = { calls: await breakdown({ ...config.breakdown, workspace: await needWorkspace(), sandboxed }), sandboxSkipped: typeof sandboxed === "string" ? sandboxed : null };
      }
      if (family === "git") figures.push(...(await floodFigures({ ...config.git, sandboxed: await sandboxedWorkspace() })));
      if (family === "network") figures.push(...(await networkFigures({ ...config.network, allowlisted: await sandboxedWorkspace("bench-net", { network: { allow: ["example.com"] } }) })));
      if (family === "throughput") figures.push(...(await throughputFigures({ ...config.throughput, workspace: await needWorkspace() })));
    } catch (error) {
      console.error(`bench: ${family} failed: ${(error as Error).stack ?? error}`);
      figures.push({ id: `${family}.failed`, family, title: `${family} (failed)`, unit: "", better: "lower", value: null, baseline: null, ratio: null, aim: null, skipped: `failed: ${(error as Error).message}` });
    }
    console.error(`bench: ${family} took ${((performance.now() - begin) / 1000).toFixed(1)} s`);
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(renderTable(figures));
  if (phases) console.log(`\n${renderBreakdown(phases.calls, phases.sandboxSkipped)}`);
  console.log(`\n${flags.quick ? "quick" : "full"} run, ${seconds.toFixed(0)} s; ${machine.cpu} ×${machine.cores}, ${machine.os}, Bun ${machine.bun}, ${machine.processCount ?? "?"} processes, load ${machine.loadAverageAtStart[0]}, git ${machine.git.revision?.slice(0, 10) ?? "?"}${machine.git.dirty ? " (src modified)" : ""}; clock: ${clock.clock}`);
  writeResults(flags.out, {
    schema: 1,
    generatedAt: new Date().toISOString(),
    mode: flags.quick ? "quick" : "full",
    durationSeconds: Math.round(seconds),
    machine,
    clock,
    signalWorkload: { kind: sigstamp.kind, note: sigstamp.note },
    emptyProgram: { flags: empty.flags, bytes: statSync(empty.path).size, buildMs: empty.buildMs },
    peer,
    settings: config,
    figures,
    breakdown: phases,
  });
  console.log(`wrote ${flags.out}`);
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    cleanupAll();
    process.exit(128 + (signal === "SIGINT" ? 2 : signal === "SIGTERM" ? 15 : 1));
  });
}

try {
  await main();
} catch (error) {
  console.error(`bench: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  cleanupAll();
}
