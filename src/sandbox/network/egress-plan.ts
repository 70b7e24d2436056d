/**
 * Where one execution's way out under a network allowlist will be, decided before the
 * sandbox's view is made (the socket's path, the port inside, the proxy variables), and the
 * counts `ps` reads while it lives. The proxy itself is egress.ts, loaded only by an exec
 * that has an allowlist: nothing else pays for its modules.
 */
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PATH_MISSING, tolerating } from "../../platform/errno.ts";
import { lazyOs } from "../../platform/lazy.ts";
import { isLinux } from "../../platform/os.ts";
import type { HostStats } from "./proxy.ts";

/** Where the sandbox is shown the proxy's socket. */
export const EGRESS_SOCKET = "/.paseo-egress.sock";
/** The loopback port of the sandbox's own network namespace that reaches the proxy (its namespace: no clash with the host's). */
export const EGRESS_PORT = 3128;
/** The longest Unix socket path (sun_path holds 108 bytes with its NUL on Linux, 104 on macOS). */
const SOCKET_PATH_MAX = 103;

/** What `ps` shows of an execution's way out. */
export interface EgressStats {
  denied: number;
  failed: number;
  hosts: Record<string, HostStats>;
}

/** Where one execution's way out will be, decided before the sandbox's view is made. */
export interface EgressPlan {
  /**
   * Linux: the proxy's socket on the host, shown inside at EGRESS_SOCKET. macOS (null): the
   * proxy listens on a free loopback TCP port, the one the Seatbelt profile lets the workload
   * reach; there is no network namespace to show a socket in.
   */
  socketPath: string | null;
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
  if (!isLinux) return { socketPath: null, dir, execId, allow, temporary: null };
  const name = `egress-${execId}.sock`;
  const temporary = Buffer.byteLength(join(dir, name)) > SOCKET_PATH_MAX ? mkdtempSync(join(lazyOs().tmpdir(), "phr-egress-")) : null;
  return { socketPath: join(temporary ?? dir, name), dir, execId, allow, temporary };
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
