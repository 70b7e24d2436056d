/**
 * The network allowlist's cost (issue 32), two figures:
 *
 * - exec /bin/true, pipes, sandboxed under an allowlist, beside the same exec with network
 *   "none" in the same workspace, alternating (the policy proxy and its counts file start and
 *   stop with every execution; the init's forwarder listens before the workload starts). Aim:
 *   at most a few ms added.
 * - throughput through the init's forwarder and the policy proxy (CONNECT to a loopback
 *   server) against a direct loopback connection to the same server (network-proxy.ts). Aim:
 *   at least 0.8×.
 */
import { wallOfTrue, type BenchWorkspace } from "./exec-overhead.ts";
import { figure, skipped, type Figure } from "./report.ts";
import { alternated, summarize } from "./stats.ts";
import { networkProxyThroughput } from "./network-proxy.ts";

export interface NetworkOptions {
  trials: number;
  warmup: number;
  /** A workspace created under isolation "sandbox" with an allowlist; why not, when there is none. */
  allowlisted: BenchWorkspace | string;
  throughputBytes: number;
  runs: number;
}

const MiB = 2 ** 20;

async function allowlistExecFigure(options: NetworkOptions): Promise<Figure> {
  const title = "exec /bin/true, pipes, sandboxed under a network allowlist: wall time";
  if (typeof options.allowlisted === "string") return skipped({ id: "network.exec-allowlist", family: "network", title, unit: "ms", better: "lower", reason: options.allowlisted });
  const policed = options.allowlisted;
  const none = { id: policed.id, options: { ...policed.options, network: "none" } };
  const runs = await alternated(options, () => wallOfTrue(policed), () => wallOfTrue(none));
  const a = summarize(runs.measured);
  const n = summarize(runs.baseline);
  return figure({
    id: "network.exec-allowlist",
    family: "network",
    title,
    unit: "ms",
    better: "lower",
    value: a.p50,
    baseline: { label: 'the same sandboxed exec with network "none"', value: n.p50 },
    aim: { text: "≤ a few ms added (≤ +5 ms p50)", check: ({ value, baseline }) => value - baseline <= 5 },
    detail: `the allowlist adds ${(a.p50 - n.p50).toFixed(2)} ms (p50); under it p50 ${a.p50.toFixed(2)} / p90 ${a.p90.toFixed(2)} ms; "none" p50 ${n.p50.toFixed(2)} / p90 ${n.p90.toFixed(2)} ms`,
    stats: { trials: options.trials, allowlist: a, none: n, overheadMsP50: a.p50 - n.p50 },
  });
}

async function throughputFigure(options: NetworkOptions): Promise<Figure> {
  const result = await networkProxyThroughput(options.throughputBytes, options.runs);
  return figure({
    id: "network.proxy-throughput",
    family: "network",
    title: "TCP throughput through the forwarder and the policy proxy (CONNECT), loopback",
    unit: "MiB/s",
    better: "higher",
    value: result.proxiedMiBps,
    baseline: { label: "a direct loopback connection to the same server", value: result.directMiBps },
    aim: { text: "≥ 0.8× direct", check: ({ ratio }) => ratio >= 0.8 },
    detail: `${result.runs} runs of ${result.bytes / MiB} MiB each way, the order rotating every run, median, each party a process of its own; ${result.nativeMiBps === null ? "socat not installed: no native relay measured" : `the same two hops by socat (C, read/write): ${result.nativeMiBps.toFixed(0)} MiB/s, ${result.nativeRatio!.toFixed(2)}× direct, the ceiling of any user-space relay here`}`,
    stats: result,
  });
}

export async function networkFigures(options: NetworkOptions): Promise<Figure[]> {
  return [await allowlistExecFigure(options), await throughputFigure(options)];
}
