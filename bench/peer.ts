/**
 * Figure 8 (optional): this runtime against a peer runtime — the upstream Node fixture, or any
 * executable that speaks the command runtime protocol v1 — given as
 * `PASEO_BENCH_PEER=/path/to/runtime`. Without it the family yields nothing (the figures are
 * omitted, not failed).
 * - `inspect` of a ready workspace (adopted from the same directory by each runtime's own
 *   `create`): ours against the peer's, trials alternating. Aim: ≥ 25× faster.
 * - `exec` of /bin/true (pipes), driven like the daemon, spawn → exit + every stream at EOF.
 *   Aim: ≥ 25× faster.
 * Each runtime gets a home of its own in a temp dir (options.stateDirectory, and HOME /
 * XDG_STATE_HOME / PASEO_HOST_RUNTIME_HOME for a peer that ignores the option). The peer is
 * spoken to in the seed dialect, or the later one (SPEC-later-dialect.md) if it refuses that.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { INSTANCE_ID, envelope, laterEnvelope } from "../kit/envelope.ts";
import { msBetween } from "./clock.ts";
import { BenchExec, describeFailure } from "./driver.ts";
import { BIN, runProcess, tempDir, withTimeout } from "./procs.ts";
import { figure, type Figure } from "./report.ts";
import { summarize, type Summary } from "./stats.ts";

export interface PeerOptions {
  trials: number;
  warmup: number;
  /** The peer's executable (PASEO_BENCH_PEER). */
  peer: string;
}

type Dialect = "seed" | "later";

/** One runtime as the bench drives it: its binary, home and environment. */
interface Runtime {
  label: string;
  bin: string;
  options: Record<string, unknown>;
  env: Record<string, string | undefined>;
}

const WORKSPACE = "bench-peer";
const RUN_TIMEOUT_MS = 30_000;
/** ≥ 25× faster: ours / theirs at most 1/25. */
const AIM = { text: "≥ 25× faster (ratio ≤ 0.04)", check: ({ ratio }: { ratio: number }) => ratio <= 1 / 25 };

function runtime(label: string, bin: string, dir: string): Runtime {
  const home = join(dir, label);
  mkdirSync(home, { recursive: true });
  const state = join(home, "state");
  return {
    label,
    bin,
    options: { stateDirectory: state },
    env: { ...process.env, HOME: home, XDG_STATE_HOME: join(home, "xdg"), PASEO_HOST_RUNTIME_HOME: state },
  };
}

function request(dialect: Dialect, options: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  const head = dialect === "later" ? { protocolVersion: 1, runtimeInstanceId: INSTANCE_ID } : { protocolVersion: 1 };
  return `${JSON.stringify({ ...head, ...extra, options })}\n`;
}

function createInput(dialect: Dialect, path: string) {
  return { workspaceId: WORKSPACE, project: { projectId: "bench", source: { kind: dialect === "seed" ? "host-directory" : "directory", path } }, placement: { kind: "existing" } };
}

/** Runs one lifecycle op of `rt`; returns its wall time, or throws with its stderr. */
async function op(rt: Runtime, dialect: Dialect, args: string[], extra: Record<string, unknown> = {}): Promise<{ ms: number; response: Record<string, unknown> }> {
  const result = await runProcess([rt.bin, ...args], { stdin: request(dialect, rt.options, extra), env: rt.env });
  if (result.code !== 0) throw new Error(`${rt.label} ${args[0]} exited ${result.code ?? result.signal}: ${result.stderr.trim()}`);
  return { ms: result.ms, response: JSON.parse(result.stdout) };
}

/** Creates the workspace in `rt`, in the seed dialect or else the later one; returns the dialect that worked. */
async function adopt(rt: Runtime, project: string): Promise<Dialect> {
  const failures: string[] = [];
  for (const dialect of ["seed", "later"] as const) {
    try {
      await op(rt, dialect, ["create", "--workspace-id", WORKSPACE], { input: createInput(dialect, project) });
      return dialect;
    } catch (error) {
      failures.push(`${dialect}: ${(error as Error).message}`);
    }
  }
  throw new Error(`${rt.label} could not create a workspace in either dialect (${failures.join("; ")})`);
}

async function inspect(rt: Runtime, dialect: Dialect): Promise<number> {
  const { ms, response } = await op(rt, dialect, ["inspect", "--workspace-id", WORKSPACE]);
  const status = (response.inspection as { status?: string } | undefined)?.status;
  if (status !== "ready") throw new Error(`${rt.label} inspect answered ${JSON.stringify(response)}`);
  return ms;
}

async function execTrue(rt: Runtime, dialect: Dialect): Promise<number> {
  const spawn = (dialect === "later" ? laterEnvelope : envelope)(["/bin/true"], { options: rt.options });
  const exec = new BenchExec(WORKSPACE, spawn, { bin: rt.bin, env: rt.env });
  exec.closeStdin();
  const done = await withTimeout(exec.done, RUN_TIMEOUT_MS, `${rt.label} exec of /bin/true`);
  const failure = describeFailure(done);
  if (failure) throw new Error(`${rt.label} exec of /bin/true: ${failure}`);
  return msBetween(exec.spawnedAt, done.endedAt);
}

/** Alternates ours and theirs (order flips every round); warm-up rounds dropped. */
async function alternate(options: PeerOptions, ours: () => Promise<number>, theirs: () => Promise<number>): Promise<{ ours: Summary; theirs: Summary }> {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < options.warmup + options.trials; i++) {
    const first = i % 2 === 0 ? await theirs() : null;
    const mine = await ours();
    const other = first ?? (await theirs());
    if (i < options.warmup) continue;
    a.push(mine);
    b.push(other);
  }
  return { ours: summarize(a), theirs: summarize(b) };
}

const fmt = (s: Summary) => `p50 ${s.p50.toFixed(2)} / p90 ${s.p90.toFixed(2)} / max ${s.max.toFixed(1)} ms`;

function peerFigure(id: string, title: string, result: { ours: Summary; theirs: Summary }, peer: string, dialect: Dialect): Figure {
  return figure({
    id,
    family: "peer",
    title,
    unit: "ms",
    better: "lower",
    value: result.ours.p50,
    baseline: { label: "the peer runtime", value: result.theirs.p50 },
    aim: AIM,
    detail: `${(result.theirs.p50 / result.ours.p50).toFixed(1)}× faster; ours ${fmt(result.ours)}; peer ${fmt(result.theirs)}; ${dialect} dialect`,
    stats: { ours: result.ours, peer: result.theirs, dialect },
    note: `peer: ${peer}`,
  });
}

export async function peerFigures(options: PeerOptions): Promise<Figure[]> {
  const dir = tempDir("phr-bench-peer-");
  const project = join(dir, "project");
  mkdirSync(project);
  const ours = runtime("ours", BIN, dir);
  const peer = runtime("peer", options.peer, dir);
  const dialect = await adopt(peer, project);
  await op(ours, dialect, ["create", "--workspace-id", WORKSPACE], { input: createInput(dialect, project) });
  try {
    const inspected = await alternate(options, () => inspect(ours, dialect), () => inspect(peer, dialect));
    const executed = await alternate(options, () => execTrue(ours, dialect), () => execTrue(peer, dialect));
    return [
      peerFigure("peer.inspect", "inspect of a ready workspace, against the peer", inspected, options.peer, dialect),
      peerFigure("peer.exec", "exec /bin/true (pipes), against the peer", executed, options.peer, dialect),
    ];
  } finally {
    for (const rt of [ours, peer]) await op(rt, dialect, ["destroy", "--workspace-id", WORKSPACE]).catch(() => {});
  }
}
