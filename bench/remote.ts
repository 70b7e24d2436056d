/**
 * Figure 6: `--remote` against a private sshd on 127.0.0.1 (kit/sshd.ts, the tests' own), each figure
 * next to the same operation run locally in the same run:
 * - inspect, with connection reuse (ControlMaster, the default) and without (a new handshake
 *   per call: remote.controlPersistSeconds 0);
 * - exec of /bin/true (spawn to the end of fd 4, stdout, exit), with and without reuse;
 * - the daemon's inspect + exec pair, with and without reuse: with reuse it costs two
 *   multiplexed channels on one connection, not two handshakes;
 * - stdout throughput of 64 MiB through the multiplex, against a local exec;
 * - for context, the floor of any remote command: `ssh host true` over a shared connection and
 *   over a new one (ssh + the remote user's shell; here root's ~/.bashrc is part of it).
 */
import { join } from "node:path";
import { startSshd, type SshLab } from "../kit/sshd.ts";
import { readyWorkspace } from "../kit/workspace.ts";
import { BenchExec, describeFailure, envelope } from "./driver.ts";
import { BIN, runProcess, tempDir } from "./procs.ts";
import { figure, type Figure } from "./report.ts";
import { alternated, summarize, type Summary } from "./stats.ts";
import { monotonicNs, msBetween } from "./clock.ts";

export interface RemoteBenchOptions {
  trials: number;
  warmup: number;
  throughputBytes: number;
}

const MiB = 2 ** 20;
const fmt = (s: Summary) => `p50 ${s.p50.toFixed(1)} / p90 ${s.p90.toFixed(1)} / max ${s.max.toFixed(0)} ms`;
const request = (options: Record<string, unknown>) => `${JSON.stringify({ protocolVersion: 1, options })}\n`;

/** `ours` and `local` trials alternated (stats.ts), so load changes hit both alike. */
async function paired(options: RemoteBenchOptions, ours: () => Promise<number>, local: () => Promise<number>): Promise<{ ours: Summary; local: Summary }> {
  const runs = await alternated(options, ours, local);
  return { ours: summarize(runs.measured), local: summarize(runs.baseline) };
}

function remoteFigure(id: string, title: string, result: { ours: Summary; local: Summary }, baseline: string, note?: string): Figure {
  return figure({
    id,
    family: "remote",
    title,
    unit: "ms",
    better: "lower",
    value: result.ours.p50,
    baseline: { label: baseline, value: result.local.p50 },
    detail: `ours ${fmt(result.ours)}; ${baseline} ${fmt(result.local)}`,
    stats: result,
    note,
  });
}

async function timedOp(argv: string[], stdin: string, expect: string): Promise<number> {
  const result = await runProcess(argv, { stdin });
  if (result.code !== 0 || !result.stdout.includes(expect)) throw new Error(`${argv.join(" ")} failed (${result.code}): ${result.stderr.trim()}`);
  return result.ms;
}

async function timedExec(workspaceId: string, options: Record<string, unknown>, prefix: string[], argv = ["/bin/true"]): Promise<number> {
  const exec = new BenchExec(workspaceId, envelope(argv, { options }), { prefix });
  const done = await exec.done;
  const failure = describeFailure(done);
  if (failure) throw new Error(`exec ${argv.join(" ")} failed: ${failure}`);
  return msBetween(exec.spawnedAt, done.endedAt);
}

export async function remoteFigures(options: RemoteBenchOptions): Promise<Figure[]> {
  const lab: SshLab = await startSshd();
  const local = await readyWorkspace("bench-remote-local");
  try {
    return await measure(options, lab, local);
  } finally {
    await lab.stop();
    local.cleanup();
  }
}

async function measure(options: RemoteBenchOptions, lab: SshLab, local: Awaited<ReturnType<typeof readyWorkspace>>): Promise<Figure[]> {
  const figures: Figure[] = [];
  const repo = join(tempDir("phr-bench-remote-"), "repo");
  Bun.spawnSync(["sh", "-c", `git init -q -b main ${repo} && cd ${repo} && echo x > f && git add f && git -c user.name=b -c user.email=b@b commit -qm x`]);
  const id = "bench-remote";
  const reuse = lab.options;
  const fresh = { ...lab.options, remote: { ...lab.options.remote, controlPersistSeconds: 0 } };
  const input = { workspaceId: id, project: { projectId: "b", source: { kind: "host-directory", path: repo } }, placement: { kind: "existing" } };
  await timedOp([BIN, ...lab.prefix, "create", "--workspace-id", id], `${JSON.stringify({ protocolVersion: 1, input, options: reuse })}\n`, '"state"');
  const inspect = (opts: Record<string, unknown>) => () => timedOp([BIN, ...lab.prefix, "inspect", "--workspace-id", id], request(opts), '"ready"');
  const localInspect = () => timedOp([BIN, "inspect", "--workspace-id", local.id], request(local.options), '"ready"');
  const localExec = () => timedExec(local.id, local.options, []);

  figures.push(remoteFigure("remote.inspect.reuse", "inspect, shared connection", await paired(options, inspect(reuse), localInspect), "local inspect"));
  figures.push(remoteFigure("remote.inspect.fresh", "inspect, new connection each call", await paired(options, inspect(fresh), localInspect), "local inspect"));
  figures.push(remoteFigure("remote.exec.reuse", "exec /bin/true, shared connection", await paired(options, () => timedExec(id, reuse, lab.prefix), localExec), "local exec"));
  figures.push(remoteFigure("remote.exec.fresh", "exec /bin/true, new connection", await paired(options, () => timedExec(id, fresh, lab.prefix), localExec), "local exec"));
  const pair = (opts: Record<string, unknown>) => async () => (await inspect(opts)()) + (await timedExec(id, opts, lab.prefix));
  const localPair = async () => (await localInspect()) + (await localExec());
  figures.push(remoteFigure("remote.pair.reuse", "inspect + exec (the daemon's pair), shared connection", await paired(options, pair(reuse), localPair), "local pair", "two multiplexed channels, one handshake"));
  figures.push(remoteFigure("remote.pair.fresh", "inspect + exec, new connection each", await paired(options, pair(fresh), localPair), "local pair", "two handshakes"));

  const sshTrue = (settings: string[]) => async () => {
    const begin = monotonicNs();
    const result = Bun.spawnSync(["ssh", "-F", lab.configFile, "-o", "BatchMode=yes", ...settings, "-p", String(lab.port), "root@127.0.0.1", "true"], { stdout: "ignore", stderr: "pipe" });
    if (result.exitCode !== 0) throw new Error(`ssh true failed: ${result.stderr}`);
    return msBetween(begin, monotonicNs());
  };
  const socket = join(lab.localHome, "ssh", "bench-floor");
  const shared = ["-o", "ControlMaster=auto", "-o", `ControlPath=${socket}`, "-o", "ControlPersist=30"];
  figures.push(remoteFigure("remote.floor.ssh-true", "context: ssh host true, shared vs new connection", await paired(options, sshTrue(shared), sshTrue(["-o", "ControlPath=none"])), "new connection", "the floor of every remote call: ssh and the remote login shell"));

  const bytes = options.throughputBytes;
  const cat = ["head", "-c", String(bytes), "/dev/zero"];
  const env = { PATH: "/usr/bin:/bin" };
  const remoteMs: number[] = [];
  const localMs: number[] = [];
  for (let i = 0; i < 3; i++) {
    for (const [target, opts, prefix, into] of [[id, reuse, lab.prefix, remoteMs], [local.id, local.options, [], localMs]] as const) {
      const exec = new BenchExec(target, envelope(cat, { options: opts, env }), { prefix: [...prefix] });
      const done = await exec.done;
      if (done.stdoutBytes !== bytes) throw new Error(`throughput run delivered ${done.stdoutBytes} of ${bytes} bytes`);
      into.push(msBetween(exec.spawnedAt, done.endedAt));
    }
  }
  const rate = (ms: number[]) => bytes / MiB / (summarize(ms).p50 / 1000);
  figures.push(
    figure({
      id: "remote.throughput",
      family: "remote",
      title: `stdout throughput, ${bytes / MiB} MiB through the multiplex`,
      unit: "MiB/s",
      better: "higher",
      value: rate(remoteMs),
      baseline: { label: "local exec", value: rate(localMs) },
      detail: `remote ${rate(remoteMs).toFixed(0)} MiB/s; local ${rate(localMs).toFixed(0)} MiB/s (median of 3)`,
    }),
  );
  Bun.spawnSync(["ssh", "-F", lab.configFile, "-o", `ControlPath=${socket}`, "-O", "exit", "unused"], { stdout: "ignore", stderr: "ignore" });
  return figures;
}
