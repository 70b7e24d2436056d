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
  /** The proxy's socket on the host, to be shown at EGRESS_SOCKET. */
  socketPath: string;
  /** The proxy variables the workload gets (proxy-env.ts). */
  env: Record<string, string>;
  close(): Promise<void>;
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

/**
 * Starts the proxy of execution `execId` for `allow` (entries as the setting recorded them),
 * its socket and counts in `dir` (made 0700 if need be; a temporary 0700 directory when the
 * socket's path would be too long).
 */
export async function openEgress(options: { dir: string; execId: string; allow: readonly string[] }): Promise<Egress> {
  mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  let socketDir = options.dir;
  let temporary: string | null = null;
  if (join(socketDir, `egress-${options.execId}.sock`).length > SOCKET_PATH_MAX) socketDir = temporary = mkdtempSync(join(tmpdir(), "phr-egress-"));
  const socketPath = join(socketDir, `egress-${options.execId}.sock`);
  const statsPath = egressStatsPath(options.dir, options.execId);
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
    logLine("warn", event, { host: refusal.host, port: refusal.port, address: refusal.address, protocol: refusal.protocol, reason: refusal.reason });
    changed();
  };
  rmSync(socketPath, { force: true });
  proxy = await startPolicyProxy({
    socketPath,
    allowlist: compileAllowlist(options.allow),
    onDenied: refused("net-denied"),
    onFailure: refused("net-failed"),
    onConnection: changed,
    onError: (error) => logLine("error", "net-error", { message: `the sandbox's network proxy: ${error.message}` }),
  });
  save();
  return {
    socketPath,
    env: proxyEnvironment(EGRESS_PORT),
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
