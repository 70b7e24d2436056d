/**
 * Figure 9: what the daemon's user feels per click (issue 33). The daemon serialises the
 * operations on a workspace and runs, per click:
 * - opening a file: `inspect`, then three workspace-helper execs (stat, read, stat);
 * - a directory listing: `inspect`, then one helper exec (list);
 * - opening a terminal: `inspect`, then a PTY exec of a shell, until the first byte of output;
 * - starting an agent: `inspect`, then a pipes exec, until `started`.
 * Each is timed from the first spawn() to the end of the last call (exit and every stream at
 * EOF for a helper call), one after the other like the daemon, against the same calls run
 * directly with no runtime: the helper spawned exactly as the wrapper would spawn it
 * (src/exec/helper.ts's helperLaunch: the runtime's embedded engine), the shell in a PTY of the
 * bench's own until its first byte, the agent's program until its 'spawn' event. Rounds rotate
 * direct, unsandboxed and sandboxed, so a load spike hits all three. The helper is a stand-in:
 * bench/workloads/helper.mjs (Paseo's own helper is not in this repository).
 * Aims: a file read through us ≤ 1.5× the direct calls unsandboxed, ≤ 2× sandboxed.
 */
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { helperLaunch } from "../src/exec/helper.ts";
import { msBetween, monotonicNs } from "./clock.ts";
import { BenchExec, DirectRun, describeFailure, envelope } from "./driver.ts";
import { BIN, runProcess, tempDir, withTimeout } from "./procs.ts";
import { figure, skipped, type Figure } from "./report.ts";
import { summarize, type Summary } from "./stats.ts";

export interface ClickWorkspace {
  id: string;
  root: string;
  options: Record<string, unknown>;
}

export interface ClickOptions {
  trials: number;
  warmup: number;
  workspace: ClickWorkspace;
  /** The same kind of workspace under isolation "sandbox", or why there is none. */
  sandboxed: ClickWorkspace | string;
}

export const SCENARIOS = ["file-read", "listing", "terminal", "agent"] as const;
export type Scenario = (typeof SCENARIOS)[number];

const TITLES: Record<Scenario, string> = {
  "file-read": "open a file: inspect + helper stat, read, stat",
  listing: "list a directory: inspect + helper list",
  terminal: "open a terminal: inspect + PTY exec of sh -i, to its first byte",
  agent: "start an agent: inspect + pipes exec of cat, to `started`",
};

/** The aims of issue 33 (file read only): through us against the direct calls. */
const AIMS: Partial<Record<Scenario, { plain: number; sandboxed: number }>> = { "file-read": { plain: 1.5, sandboxed: 2 } };

const FILE = "src/app.ts";
const HELPER_CALLS: Partial<Record<Scenario, [string, string][]>> = {
  "file-read": [
    ["stat", FILE],
    ["read", FILE],
    ["stat", FILE],
  ],
  listing: [["list", "src"]],
};

const PATH = "/usr/local/bin:/usr/bin:/bin";
const SHELL_ENV = { PATH, TERM: "xterm-256color", PS1: "$ ", HOME: "/nonexistent", ENV: "" };
const RUN_TIMEOUT_MS = 15_000;

/** One click's time, and the part of it the `inspect` took (0 for the direct run). */
export interface ClickTime {
  ms: number;
  inspectMs: number;
}

/** Files a click opens, in the workspace root. */
function seedFiles(root: string): void {
  mkdirSync(join(root, "src"), { recursive: true });
  writeFileSync(join(root, FILE), `export const answer = 42;\n${"// a line of a source file\n".repeat(100)}`);
  for (let i = 0; i < 20; i++) writeFileSync(join(root, "src", `module-${i}.ts`), `export const n = ${i};\n`);
}

/** The helper stand-in, copied where no package.json lies above it (the sandbox then shows it alone). */
function installHelper(): string {
  const path = join(tempDir("phr-bench-helper-"), "paseo-workspace-helper.mjs");
  copyFileSync(join(import.meta.dir, "workloads", "helper.mjs"), path);
  return path;
}

async function inspect(ws: ClickWorkspace): Promise<number> {
  const result = await runProcess([BIN, "inspect", "--workspace-id", ws.id], { stdin: `${JSON.stringify({ protocolVersion: 1, options: ws.options })}\n` });
  const status = result.code === 0 ? (JSON.parse(result.stdout) as { inspection?: { status?: string } }).inspection?.status : null;
  if (status !== "ready") throw new Error(`inspect of ${ws.id}: exit ${result.code}, ${result.stdout.trim()} ${result.stderr.trim()}`);
  return result.ms;
}

/** One helper exec through the runtime, driven like the daemon (argv [name, op, path], env {}). */
async function helperThroughUs(ws: ClickWorkspace, helper: string, [op, path]: [string, string]): Promise<void> {
  const chunks: Buffer[] = [];
  const env = envelope(["paseo-workspace-helper", op, path], { purpose: { kind: "workspace-helper" }, env: {}, options: { ...ws.options, helperPath: helper } });
  const exec = new BenchExec(ws.id, env, { onStdout: (chunk) => chunks.push(chunk) });
  exec.closeStdin();
  const done = await withTimeout(exec.done, RUN_TIMEOUT_MS, `helper ${op} through exec`);
  const failure = describeFailure(done);
  if (failure) throw new Error(`helper ${op} through exec: ${failure}`);
  JSON.parse(Buffer.concat(chunks).toString());
}

/** The same helper call spawned directly, exactly as the wrapper spawns it (embedded engine). */
async function helperDirect(root: string, helper: string, [op, path]: [string, string]): Promise<void> {
  const launch = helperLaunch({ path: helper, source: "options.helperPath", javascript: true }, ["paseo-workspace-helper", op, path], {});
  const chunks: Buffer[] = [];
  const run = new DirectRun([BIN, ...launch.argv.slice(1)], { env: launch.env, cwd: root, onStdout: (chunk) => chunks.push(chunk) });
  run.closeStdin();
  const done = await withTimeout(run.done, RUN_TIMEOUT_MS, `direct helper ${op}`);
  if (done.code !== 0) throw new Error(`direct helper ${op} exited ${done.code ?? done.signal}: ${done.stderr}`);
  JSON.parse(Buffer.concat(chunks).toString());
}

/** A PTY exec of an interactive shell through us: spawn → first byte; then ended (not timed). */
async function terminalThroughUs(ws: ClickWorkspace): Promise<bigint> {
  let first: (at: bigint) => void = () => {};
  const firstByte = new Promise<bigint>((resolve) => (first = resolve));
  const env = envelope(["/bin/sh", "-i"], { purpose: { kind: "terminal", terminalId: "bench" }, env: SHELL_ENV, options: ws.options, stdio: { kind: "pty", rows: 24, cols: 80 } });
  const exec = new BenchExec(ws.id, env, { keepControls: true, onStdout: () => first(monotonicNs()) });
  try {
    return await withTimeout(firstByte, RUN_TIMEOUT_MS, "terminal through exec: first byte");
  } finally {
    exec.closeStdin();
    const done = await withTimeout(exec.done, RUN_TIMEOUT_MS, "terminal through exec: exit");
    exec.closeControls();
    if (done.violation) throw new Error(`terminal through exec: ${done.violation}`);
  }
}

/** The same shell in a PTY of the bench's own: spawn → first byte. */
async function terminalDirect(root: string): Promise<number> {
  let first: (at: bigint) => void = () => {};
  const firstByte = new Promise<bigint>((resolve) => (first = resolve));
  const begin = monotonicNs();
  const proc = Bun.spawn(["/bin/sh", "-i"], { cwd: root, env: SHELL_ENV, terminal: { cols: 80, rows: 24, data: () => first(monotonicNs()) } });
  try {
    return msBetween(begin, await withTimeout(firstByte, RUN_TIMEOUT_MS, "direct terminal: first byte"));
  } finally {
    proc.terminal?.write("\x04");
    await withTimeout(proc.exited, RUN_TIMEOUT_MS, "direct terminal: exit").finally(() => proc.terminal?.close());
  }
}

/** A pipes exec of an agent (cat, reading stdin) through us: spawn → `started`; then ended. */
async function agentThroughUs(ws: ClickWorkspace): Promise<bigint> {
  const exec = new BenchExec(ws.id, envelope(["cat"], { purpose: { kind: "agent", agentId: "bench", provider: "bench" }, env: { PATH }, options: ws.options }));
  try {
    return await withTimeout(exec.started, RUN_TIMEOUT_MS, "agent through exec: started");
  } finally {
    exec.closeStdin();
    const done = await withTimeout(exec.done, RUN_TIMEOUT_MS, "agent through exec: exit");
    const failure = describeFailure(done);
    if (failure) throw new Error(`agent through exec: ${failure}`);
  }
}

async function agentDirect(root: string): Promise<number> {
  const run = new DirectRun(["/bin/cat"], { cwd: root });
  try {
    return msBetween(run.spawnedAt, await withTimeout(run.running, RUN_TIMEOUT_MS, "direct agent: spawn"));
  } finally {
    run.closeStdin();
    await withTimeout(run.done, RUN_TIMEOUT_MS, "direct agent: exit");
  }
}

/** One click through the runtime, serialised like the daemon. */
export async function clickThroughUs(scenario: Scenario, ws: ClickWorkspace, helper: string): Promise<ClickTime> {
  const begin = monotonicNs();
  const inspectMs = await inspect(ws);
  const calls = HELPER_CALLS[scenario];
  if (calls) {
    for (const call of calls) await helperThroughUs(ws, helper, call);
    return { ms: msBetween(begin, monotonicNs()), inspectMs };
  }
  const end = scenario === "terminal" ? await terminalThroughUs(ws) : await agentThroughUs(ws);
  return { ms: msBetween(begin, end), inspectMs };
}

/** The same click with no runtime. */
export async function clickDirect(scenario: Scenario, root: string, helper: string): Promise<number> {
  const calls = HELPER_CALLS[scenario];
  if (calls) {
    const begin = monotonicNs();
    for (const call of calls) await helperDirect(root, helper, call);
    return msBetween(begin, monotonicNs());
  }
  return scenario === "terminal" ? await terminalDirect(root) : await agentDirect(root);
}

function fmt(s: Summary): string {
  return `p50 ${s.p50.toFixed(1)} / p90 ${s.p90.toFixed(1)} / max ${s.max.toFixed(0)} ms`;
}

/** The figure of one scenario under one isolation, against the direct calls of the same rounds. */
export function clickFigure(scenario: Scenario, sandboxed: boolean, ours: ClickTime[], direct: number[]): Figure {
  const o = summarize(ours.map((t) => t.ms));
  const i = summarize(ours.map((t) => t.inspectMs));
  const d = summarize(direct);
  const limit = AIMS[scenario]?.[sandboxed ? "sandboxed" : "plain"];
  return figure({
    id: `click.${scenario}${sandboxed ? ".sandboxed" : ""}`,
    family: "click",
    title: `${TITLES[scenario]}${sandboxed ? ", sandboxed" : ""}`,
    unit: "ms",
    better: "lower",
    value: o.p50,
    baseline: { label: "the same calls, direct", value: d.p50 },
    ...(limit ? { aim: { text: `≤ ${limit}× direct`, check: ({ ratio }: { ratio: number }) => ratio <= limit } } : {}),
    detail: `adds ${(o.p50 - d.p50).toFixed(1)} ms (p50), of which inspect ${i.p50.toFixed(1)} ms; ours ${fmt(o)}; direct ${fmt(d)}`,
    stats: { trials: ours.length, ours: o, inspect: i, direct: d, overheadMsP50: o.p50 - d.p50 },
  });
}

export async function clickFigures(options: ClickOptions): Promise<Figure[]> {
  const helper = installHelper();
  seedFiles(options.workspace.root);
  const sandboxed = typeof options.sandboxed === "string" ? null : options.sandboxed;
  if (sandboxed) seedFiles(sandboxed.root);
  const figures: Figure[] = [];
  for (const scenario of SCENARIOS) {
    const runs = { plain: [] as ClickTime[], sandboxed: [] as ClickTime[], direct: [] as number[] };
    for (let round = 0; round < options.warmup + options.trials; round++) {
      let plain: ClickTime | undefined;
      let boxed: ClickTime | undefined;
      let direct = Number.NaN;
      const steps = [
        async () => (direct = await clickDirect(scenario, options.workspace.root, helper)),
        async () => (plain = await clickThroughUs(scenario, options.workspace, helper)),
        ...(sandboxed ? [async () => (boxed = await clickThroughUs(scenario, sandboxed, helper))] : []),
      ];
      for (let k = 0; k < steps.length; k++) await steps[(round + k) % steps.length]!();
      if (round < options.warmup) continue;
      runs.direct.push(direct);
      runs.plain.push(plain!);
      if (boxed) runs.sandboxed.push(boxed);
    }
    figures.push(clickFigure(scenario, false, runs.plain, runs.direct));
    if (sandboxed) figures.push(clickFigure(scenario, true, runs.sandboxed, runs.direct));
    else {
      const limit = AIMS[scenario]?.sandboxed;
      figures.push(skipped({ id: `click.${scenario}.sandboxed`, family: "click", title: `${TITLES[scenario]}, sandboxed`, unit: "ms", better: "lower", reason: options.sandboxed as string, ...(limit ? { aim: `≤ ${limit}× direct` } : {}) }));
    }
  }
  return figures;
}
