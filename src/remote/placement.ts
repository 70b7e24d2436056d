/**
 * Which host a workspace lives on. A new workspace is placed by rendezvous hashing of its id
 * over the host keys (stable, independent of list order; adding a host moves only the
 * workspaces it wins), or on the host with the fewest live executions. The choice is recorded
 * in the local store before anything happens remotely, and every later operation follows the
 * record. Without a record (a workspace never created here) the hash decides, so routing never
 * needs the store to exist.
 */
import { diagnose, withoutProgramName } from "../output.ts";
import { decodeOwnOutput } from "../protocol/utf8.ts";
import { openExistingStore, withStore } from "../store/db.ts";
import { missingHomeIn } from "../store/home.ts";
import { placeOnce, placedHost } from "../store/placements.ts";
import type { RemoteContext } from "./context.ts";
import { firstLine, runRemote } from "./ssh.ts";
import { parseSshUrl, type RemoteHost } from "../ssh-url.ts";

/** The highest-scoring host for `workspaceId`: sha256(host key, id), first 12 hex digits as the score. */
export function hashPlacement(hosts: readonly RemoteHost[], workspaceId: string): RemoteHost {
  let best = hosts[0]!;
  let bestScore = -1;
  for (const host of hosts) {
    const score = parseInt(new Bun.CryptoHasher("sha256").update(`${host.key}\n${workspaceId}`).digest("hex").slice(0, 12), 16);
    if (score > bestScore || (score === bestScore && host.key < best.key)) [best, bestScore] = [host, score];
  }
  return best;
}

/** The configured host with `key`; a recorded host no longer configured is still reached (default program). */
export function hostByKey(ctx: RemoteContext, key: string): RemoteHost {
  return ctx.hosts.find((host) => host.key === key) ?? parseSshUrl(`ssh://${key}`);
}

/** Every host the runtime may have workspaces on: the configured ones, then those only a placement record (`recorded` keys) names. */
export function knownHosts(ctx: RemoteContext, recorded: Iterable<string>): RemoteHost[] {
  const hosts = new Map(ctx.hosts.map((host) => [host.key, host]));
  for (const key of recorded) if (!hosts.has(key)) hosts.set(key, hostByKey(ctx, key));
  return [...hosts.values()];
}

/** Where an existing workspace lives: its record, else its hash host. */
export function routeWorkspace(ctx: RemoteContext, workspaceId: string): RemoteHost {
  return routeRecorded(ctx, workspaceId) ?? hashPlacement(ctx.hosts, workspaceId);
}

/** The host for a create: the recorded one, else a fresh choice recorded now (first writer wins). */
export async function placeWorkspace(ctx: RemoteContext, workspaceId: string): Promise<RemoteHost> {
  const recorded = routeRecorded(ctx, workspaceId);
  if (recorded) return recorded;
  const choice = ctx.remote.placement === "least-loaded" && ctx.hosts.length > 1 ? await leastLoaded(ctx, workspaceId) : hashPlacement(ctx.hosts, workspaceId);
  const key = await withStore(ctx.options, ({ db }) => placeOnce(db, ctx.options.owner, workspaceId, choice.key, ctx.configuration));
  return hostByKey(ctx, key);
}

/** The recorded host, or null (no record, or no local store yet: looking never creates one). */
function routeRecorded(ctx: RemoteContext, workspaceId: string): RemoteHost | null {
  const store = openExistingStore(ctx.options);
  if (!store) return null;
  try {
    const key = placedHost(store.db, ctx.options.owner, workspaceId);
    return key === null ? null : hostByKey(ctx, key);
  } finally {
    store.db.close();
  }
}

/**
 * The host with the fewest live executions (each host's own `ps --json`), ties broken by the
 * hash order. A host without a runtime home has none. A host that does not answer is left out
 * (and said so); none answering is an error.
 */
async function leastLoaded(ctx: RemoteContext, workspaceId: string): Promise<RemoteHost> {
  const counts = await Promise.all(ctx.hosts.map((host) => liveExecutionCount(ctx, host)));
  let best: { host: RemoteHost; count: number } | null = null;
  const preferred = hashPlacement(ctx.hosts, workspaceId);
  ctx.hosts.forEach((host, i) => {
    const count = counts[i]!;
    if (count === null) return;
    if (!best || count < best.count || (count === best.count && host === preferred)) best = { host, count };
  });
  if (!best) throw new Error(`no remote host answered for least-loaded placement (${ctx.hosts.map((h) => h.key).join(", ")})`);
  return (best as { host: RemoteHost }).host;
}

/**
 * A host's live executions in its runtime home (0 when the host says the home does not exist:
 * nothing was created there yet), or null when it cannot tell. Its stderr is kept, not relayed:
 * a missing home is no problem, and a failure is said in one line.
 */
async function liveExecutionCount(ctx: RemoteContext, host: RemoteHost): Promise<number | null> {
  const home = ctx.remote.stateDirectory;
  const words = [host.binary, "ps", "--json", ...(home === undefined ? [] : ["--home", home])];
  try {
    const result = await runRemote(host, ctx.settings, words, null, { stderr: "keep" });
    if (result.status === 1 && missingHomeIn(result.stderrHead) !== null) return 0;
    if (result.status !== 0) throw new Error(`ps exited ${result.status}${saidBy(result.stderrHead)}`);
    const answer = JSON.parse(decodeOwnOutput(result.stdout, "ps --json")) as { executions?: unknown };
    if (!Array.isArray(answer.executions)) throw new Error("ps --json gave no executions list");
    return answer.executions.length;
  } catch (error) {
    diagnose(`least-loaded placement: leaving out ${host.key}: ${(error as Error).message}`);
    return null;
  }
}

/** `: <the first line of stderr>` (ssh's or the host's reason), or nothing when it said none. */
function saidBy(stderr: string): string {
  const line = firstLine(stderr);
  return line === null ? "" : `: ${withoutProgramName(line)}`;
}
