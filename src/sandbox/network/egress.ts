/**
 * The way out of a sandbox under an allowlist, as the exec wrapper holds it for one execution:
 * the policy proxy (proxy.ts) listening on a Unix socket of the runtime's own, which the sandbox
 * shows at EGRESS_SOCKET and its init forwards EGRESS_PORT of the sandbox's own loopback to
 * (egress-plan.ts). The sandbox has a network namespace of its own with nothing but that
 * loopback: no route, no DNS, so this is its only way out, whatever a program does with the
 * proxy variables. macOS (unverified here): the proxy listens on a loopback TCP port instead,
 * the only destination the Seatbelt profile allows (seatbelt.ts).
 *
 * Every refusal is a runtime-log line (`net-denied`, or `net-failed` when the upstream could
 * not be reached), every proxy failure an error line (`net-error`), and the counts per
 * execution (refusals, connections and bytes per host) are kept in a small file beside the
 * socket, which `ps` reads while the execution lives.
 */
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { logLine } from "../../log/runtime-log.ts";
import { hasErrno } from "../../platform/errno.ts";
import { compileAllowlist } from "./allowlist.ts";
import { egressStatsPath, type EgressPlan, type EgressStats } from "./egress-plan.ts";
import { startPolicyProxy, type PolicyProxy, type RefusalEvent } from "./proxy.ts";

/** The counts file is rewritten at most this often while connections come and go. */
const STATS_EVERY_MS = 250;
/**
 * What a rewrite of the counts file may fail with while the workload runs: the storage full
 * (ENOSPC, EDQUOT), read-only or unwritable (EROFS, EACCES), failing (EIO), or removed (ENOENT).
 * `ps` then shows older counts; the workload and its way out go on.
 */
const STATS_UNWRITABLE = ["ENOSPC", "EDQUOT", "EROFS", "EACCES", "EIO", "ENOENT"] as const;

/** One execution's way out, open until `close`; `port`: the proxy's loopback TCP port where it has no socket (macOS). */
export interface Egress {
  port: number | null;
  close(): Promise<void>;
}

/** The host a refusal names, without the port an HTTP authority carries (`[v6]:443` → `[v6]`). */
function hostOf(refusal: RefusalEvent): string | null {
  const suffix = `:${refusal.port}`;
  return refusal.host !== null && refusal.port !== null && refusal.host.endsWith(suffix) ? refusal.host.slice(0, -suffix.length) : refusal.host;
}

/** Starts the proxy of `plan` (its socket, its counts): the sandbox can start once this returned. */
export async function openEgress(plan: EgressPlan): Promise<Egress> {
  const { socketPath, temporary } = plan;
  const statsPath = egressStatsPath(plan.dir, plan.execId);
  const stats: EgressStats = { denied: 0, failed: 0, hosts: {} };
  let proxy: PolicyProxy | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const save = () => {
    if (proxy) stats.hosts = Object.fromEntries(proxy.stats());
    writeFileSync(`${statsPath}.tmp`, JSON.stringify(stats), { mode: 0o600 });
    renameSync(`${statsPath}.tmp`, statsPath);
  };
  // From a timer, so a failure would be an uncaught exception ending the wrapper under its workload.
  const saveLater = () => {
    timer = null;
    try {
      save();
    } catch (error) {
      if (!hasErrno(error, STATS_UNWRITABLE)) throw error;
      logLine("error", "net-error", { message: `the sandbox's network counts cannot be written (ps shows older ones): ${(error as Error).message}` });
    }
  };
  const changed = () => (timer ??= setTimeout(saveLater, STATS_EVERY_MS));
  const refused = (event: "net-denied" | "net-failed") => (refusal: RefusalEvent) => {
    if (event === "net-denied") stats.denied++;
    else stats.failed++;
    logLine("warn", event, { host: hostOf(refusal), port: refusal.port, address: refusal.address, protocol: refusal.protocol, reason: refusal.reason });
    changed();
  };
  if (socketPath !== null) rmSync(socketPath, { force: true });
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
    port: proxy.port,
    close: async () => {
      if (timer) clearTimeout(timer);
      await proxy!.close();
      const hosts = Object.fromEntries(proxy!.stats());
      if (stats.denied + stats.failed > 0 || Object.keys(hosts).length > 0) logLine("info", "net-summary", { denied: stats.denied, failed: stats.failed, hosts });
      rmSync(statsPath, { force: true });
      rmSync(`${statsPath}.tmp`, { force: true });
      if (socketPath !== null) rmSync(socketPath, { force: true });
      if (temporary) rmSync(temporary, { recursive: true, force: true });
    },
  };
}
