/**
 * The way out of a sandbox under an allowlist, as the exec wrapper holds it for one execution:
 * the policy proxy (proxy.ts) listening on a Unix socket of the runtime's own, which the sandbox
 * shows at EGRESS_SOCKET and its init forwards EGRESS_PORT of the sandbox's own loopback to.
 * The sandbox has a network namespace of its own with nothing but that loopback: no route, no
 * DNS, so this is its only way out, whatever a program does with the proxy variables.
 *
 * Every refusal is a runtime-log line (`net-denied`, or `net-failed` when the upstream could
 * not be reached), every proxy failure an error line (`net-error`), and the counts per
 * execution (refusals, connections and bytes per host) are kept in a small file beside the
 * socket, which `ps` reads while the execution lives.
 */
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { logLine } from "../../log/runtime-log.ts";
import { PATH_MISSING, tolerating } from "../../platform/errno.ts";
import { compileAllowlist } from "./allowlist.ts";
import { startPolicyProxy, type HostStats, type PolicyProxy, type RefusalEvent } from "./proxy.ts";
import { proxyEnvironment } from "./proxy-env.ts";

/** Where the sandbox is shown the proxy's socket. */
export const EGRESS_SOCKET = "/.paseo-egress.sock";
/** The loopback port of the sandbox's own network namespace that reaches the proxy (its namespace: no clash with the host's). */
export const EGRESS_PORT = 3128;
/** The longest Unix socket path (sun_path holds 108 bytes with its NUL on Linux, 104 on macOS). */
const SOCKET_PATH_MAX = 103;
/** The counts file is rewritten at most this often while connections come and go. */
const STATS_EVERY_MS = 250;

/** What `ps` shows of an execution's way out. */
export interface EgressStats {
  denied: number;
  failed: number;
  hosts: Record<string, HostStats>;
}

/** One execution's way out, open until `close`. */
export interface Egress {
  close(): Promise<void>;
}

/** Where one execution's way out will be, decided before the sandbox's view is made. */
export interface EgressPlan {
  /** The proxy's socket on the host, shown inside at EGRESS_SOCKET. */
  socketPath: string;
  /** The workspace's storage, where the counts file is. */
  dir: string;
  execId: string;
  /** The allowlist's entries, as recorded. */
  allow: readonly string[];
  /** A directory made for the socket because the storage's path is too long for one; removed at close. */
  temporary: string | null;
}

/** The plan of execution `execId`'s way out in `dir` (the workspace's storage, made 0700 if need be). */
export function planEgress(dir: string, execId: string, allow: readonly string[]): EgressPlan {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const name = `egress-${execId}.sock`;
  const temporary = join(dir, name).length > SOCKET_PATH_MAX ? mkdtempSync(join(tmpdir(), "phr-egress-")) : null;
  return { socketPath: join(temporary ?? dir, name), dir, execId, allow, temporary };
}

/** What the workload's environment gains under an allowlist (proxy-env.ts). */
export function egressEnvironment(): Record<string, string> {
  return proxyEnvironment(EGRESS_PORT);
}

/** The host a refusal names, without the port an HTTP authority carries (`[v6]:443` → `[v6]`). */
function hostOf(refusal: RefusalEvent): string | null {
  const suffix = `:${refusal.port}`;
  return refusal.host !== null && refusal.port !== null && refusal.host.endsWith(suffix) ? refusal.host.slice(0, -suffix.length) : refusal.host;
}

/** The counts file of execution `execId` in `dir` (the workspace's storage). */
export function egressStatsPath(dir: string, execId: string): string {
  return join(dir, `egress-${execId}.json`);
}

/** The counts of a live execution under an allowlist, or null (none, or not under one). */
export function readEgressStats(dir: string, execId: string): EgressStats | null {
  const text = tolerating(PATH_MISSING, null, () => readFileSync(egressStatsPath(dir, execId), "utf8"));
  if (text === null) return null;
  try {
    return JSON.parse(text) as EgressStats;
  } catch (error) {
    // Written by rename, so never torn; a file of another shape is no count.
    if (error instanceof SyntaxError) return null;
    throw error;
  }
}

/** Starts the proxy of `plan` (its socket, its counts): the sandbox can start once this returned. */
export async function openEgress(plan: EgressPlan): Promise<Egress> {
  const { socketPath, temporary } = plan;
  const statsPath = egressStatsPath(plan.dir, plan.execId);
  const stats: EgressStats = { denied: 0, failed: 0, hosts: {} };
  let proxy: PolicyProxy | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const save = () => {
    timer = null;
    if (proxy) stats.hosts = Object.fromEntries(proxy.stats());
    writeFileSync(`${statsPath}.tmp`, JSON.stringify(stats), { mode: 0o600 });
    renameSync(`${statsPath}.tmp`, statsPath);
  };
  const changed = () => (timer ??= setTimeout(save, STATS_EVERY_MS));
  const refused = (event: "net-denied" | "net-failed") => (refusal: RefusalEvent) => {
    if (event === "net-denied") stats.denied++;
    else stats.failed++;
    logLine("warn", event, { host: hostOf(refusal), port: refusal.port, address: refusal.address, protocol: refusal.protocol, reason: refusal.reason });
    changed();
  };
  rmSync(socketPath, { force: true });
  proxy = await startPolicyProxy({
    socketPath,
    allowlist: compileAllowlist(plan.allow),
    onDenied: refused("net-denied"),
    onFailure: refused("net-failed"),
    onConnection: changed,
    onError: (error) => logLine("error", "net-error", { message: `the sandbox's network proxy: ${error.message}` }),
  });
  save();
  return {
    close: async () => {
      if (timer) clearTimeout(timer);
      await proxy!.close();
      const hosts = Object.fromEntries(proxy!.stats());
      if (stats.denied + stats.failed > 0 || Object.keys(hosts).length > 0) logLine("info", "net-summary", { denied: stats.denied, failed: stats.failed, hosts });
      rmSync(statsPath, { force: true });
      rmSync(socketPath, { force: true });
      if (temporary) rmSync(temporary, { recursive: true, force: true });
    },
  };
}
