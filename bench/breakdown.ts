/**
 * Where each call's time goes (issue 33): the calls of a click, run with
 * PASEO_HOST_RUNTIME_TRACE (src/trace.ts) so the binary notes when it reaches each phase, one
 * call at a time, kinds alternating every round. Each phase is the time from the previous
 * mark to its own, median over the trials; the first is the bench's spawn() to the binary's
 * first evaluated module (exec of a ~100 MB executable, Bun's own start, the modules before
 * src/trace.ts), the last its `exiting` mark to the bench seeing exit and every stream at EOF
 * (Bun's exit path, the kernel's teardown). Wall clock on both sides: performance.timeOrigin
 * plus performance.now(), comparable across processes to a few µs.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BenchExec, describeFailure, envelope } from "./driver.ts";
import { BIN, tempDir, track, withTimeout } from "./procs.ts";
import { median } from "./stats.ts";

export interface BreakdownWorkspace {
  id: string;
  options: Record<string, unknown>;
}

export interface BreakdownOptions {
  trials: number;
  warmup: number;
  workspace: BreakdownWorkspace;
  sandboxed: BreakdownWorkspace | string;
}

/** One traced process: its marks as [name, epoch ms], bracketed by the bench's spawn and end. */
interface Traced {
  spawnedAt: number;
  endedAt: number;
  marks: [string, number][];
}

/** One call kind's phases: [phase, median ms], in the order they happen, and the median wall time. */
export interface CallBreakdown {
  call: string;
  trials: number;
  wallMs: number;
  phases: [string, number][];
}

const TIMEOUT_MS = 15_000;
const epochMs = () => performance.timeOrigin + performance.now();

/** The trace lines the runs so far appended, and an empty file for the next. */
function takeTrace(file: string): { pid: number; origin: number; marks: [string, number][] }[] {
  const text = readFileSync(file, "utf8");
  writeFileSync(file, "");
  return text.split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

async function tracedInspect(ws: BreakdownWorkspace, env: Record<string, string | undefined>): Promise<number> {
  return await new Promise((resolve, reject) => {
    const child = track(spawn(BIN, ["inspect", "--workspace-id", ws.id], { stdio: ["pipe", "pipe", "pipe"], env }));
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => (out += chunk));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 && out.includes('"ready"') ? resolve(epochMs()) : reject(new Error(`traced inspect: exit ${code}: ${out}`))));
    child.stdin!.end(`${JSON.stringify({ protocolVersion: 1, options: ws.options })}\n`);
  });
}

async function tracedExec(ws: BreakdownWorkspace, env: Record<string, string | undefined>, mode: "pipes" | "pty"): Promise<number> {
  const stdio = mode === "pty" ? { kind: "pty", rows: 24, cols: 80 } : { kind: "pipes" };
  const exec = new BenchExec(ws.id, envelope(["/bin/true"], { options: ws.options, stdio }), { env, keepControls: mode === "pty" });
  exec.closeStdin();
  const done = await withTimeout(exec.done, TIMEOUT_MS, `traced ${mode} exec`);
  exec.closeControls();
  const failure = describeFailure(done);
  if (failure) throw new Error(`traced ${mode} exec: ${failure}`);
  return epochMs();
}

/** Phases of one traced process: [name, ms], the first from spawn, the last to the bench's end. */
export function phasesOf(run: Traced): [string, number][] {
  const out: [string, number][] = [];
  let previous = run.spawnedAt;
  for (const [name, at] of run.marks) {
    out.push([name === "evaluated" ? "process start (exec, Bun, first modules)" : name, at - previous]);
    previous = at;
  }
  out.push(["process exit (seen by the caller)", run.endedAt - previous]);
  return out;
}

/** Median of each phase over the runs, in the order of first appearance; the wall time's median. */
export function summarizePhases(call: string, runs: Traced[]): CallBreakdown {
  const order: string[] = [];
  const values = new Map<string, number[]>();
  for (const run of runs) {
    // A phase met twice in one run (none today) is summed.
    const perRun = new Map<string, number>();
    for (const [name, ms] of phasesOf(run)) {
      if (!values.has(name)) {
        values.set(name, []);
        order.push(name);
      }
      perRun.set(name, (perRun.get(name) ?? 0) + ms);
    }
    for (const [name, ms] of perRun) values.get(name)!.push(ms);
  }
  return { call, trials: runs.length, wallMs: median(runs.map((r) => r.endedAt - r.spawnedAt)), phases: order.map((name) => [name, median(values.get(name)!)]) };
}

export async function breakdown(options: BreakdownOptions): Promise<CallBreakdown[]> {
  const file = join(tempDir("phr-bench-trace-"), "trace.jsonl");
  writeFileSync(file, "");
  const env = { ...process.env, PASEO_HOST_RUNTIME_TRACE: file };
  const calls: [string, (ws: BreakdownWorkspace) => Promise<number>, BreakdownWorkspace][] = [
    ["inspect", (ws) => tracedInspect(ws, env), options.workspace],
    ["exec /bin/true, pipes", (ws) => tracedExec(ws, env, "pipes"), options.workspace],
    ["exec /bin/true, PTY", (ws) => tracedExec(ws, env, "pty"), options.workspace],
  ];
  if (typeof options.sandboxed !== "string") calls.push(["exec /bin/true, pipes, sandboxed", (ws) => tracedExec(ws, env, "pipes"), options.sandboxed]);
  const runs = new Map<string, Traced[]>(calls.map(([name]) => [name, []]));
  for (let round = 0; round < options.warmup + options.trials; round++) {
    for (let k = 0; k < calls.length; k++) {
      const [name, run, ws] = calls[(round + k) % calls.length]!;
      takeTrace(file);
      const spawnedAt = epochMs();
      const endedAt = await run(ws);
      // The wrapper's own line; a sandboxed exec's init runs with an env of its own, untraced.
      const [line] = takeTrace(file).filter((l) => l.marks.length > 0);
      if (!line) throw new Error(`${name}: the binary wrote no trace (built before src/trace.ts?)`);
      if (round >= options.warmup) runs.get(name)!.push({ spawnedAt, endedAt, marks: line.marks.map(([mark, ms]) => [mark, line.origin + ms]) });
    }
  }
  return calls.map(([name]) => summarizePhases(name, runs.get(name)!));
}

/** The breakdown as text, one block per call: each phase's median ms and its share of the wall time. */
export function renderBreakdown(calls: readonly CallBreakdown[], skippedWhy: string | null = null): string {
  const out = ["Where each call's time goes (PASEO_HOST_RUNTIME_TRACE, median ms per phase; each phase ends at the mark it names):"];
  for (const c of calls) {
    out.push(`  ${c.call}: wall ${c.wallMs.toFixed(1)} ms over ${c.trials} trials`);
    const width = Math.max(...c.phases.map(([name]) => name.length));
    for (const [name, ms] of c.phases) out.push(`    ${name.padEnd(width)}  ${ms.toFixed(2).padStart(7)} ms  ${((100 * ms) / c.wallMs).toFixed(0).padStart(3)} %`);
  }
  if (skippedWhy) out.push(`  sandboxed exec: skipped: ${skippedWhy}`);
  return out.join("\n");
}
