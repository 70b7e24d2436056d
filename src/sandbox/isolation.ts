/**
 * A workspace keeps its isolation, as it keeps its dialect: created with `isolation: "sandbox"`
 * (its network, sandboxReadOnly and sandboxReadWrite with it), every later exec and resume must
 * run with at least that confinement. A request asking for less (isolation "none", the host's
 * network where "none" was recorded, a path read-write or read-only that the record does not
 * show so) is refused before anything is launched, naming what was recorded. One edited option,
 * or a second configured runtime, cannot unsandbox the agent.
 */
import type { WorkspaceRecord } from "../store/workspaces.ts";
import { isInside } from "../workspace/paths.ts";
import { WorkspaceRefused } from "../workspace/refusals.ts";
import type { Network, RecordedIsolation } from "./settings.ts";

/** The request asks for less isolation than the workspace keeps. */
export class LessIsolation extends WorkspaceRefused {}

/** `isolation "sandbox" (network "host", sandboxReadOnly [...], sandboxReadWrite [...])`, for messages. */
export function describeIsolation(isolation: RecordedIsolation): string {
  if (isolation.isolation === "none") return 'isolation "none"';
  const list = (paths: string[]) => `[${paths.map((path) => JSON.stringify(path)).join(", ")}]`;
  return `isolation "sandbox" (network ${JSON.stringify(isolation.network)}, sandboxReadOnly ${list(isolation.sandboxReadOnly)}, sandboxReadWrite ${list(isolation.sandboxReadWrite)})`;
}

/** What of `requested` is less confined than `recorded`, or null when it is at least as confined. */
function weakerPart(recorded: RecordedIsolation, requested: RecordedIsolation): string | null {
  if (recorded.isolation === "none") return null;
  if (requested.isolation === "none") return 'isolation "none"';
  const network = widerNetwork(recorded.network, requested.network);
  if (network !== null) return network;
  const writable = requested.sandboxReadWrite.find((path) => !shownBy(path, recorded.sandboxReadWrite));
  if (writable !== undefined) return `${JSON.stringify(writable)} read-write`;
  const visible = requested.sandboxReadOnly.find((path) => !shownBy(path, [...recorded.sandboxReadOnly, ...recorded.sandboxReadWrite]));
  if (visible !== undefined) return `${JSON.stringify(visible)} read-only`;
  return null;
}

/**
 * What of the requested network reaches further than the recorded one, or null. From the
 * narrowest: none, an allowlist, the host's; an allowlist is within another when each of its
 * entries is one of the other's (compared as recorded: canonical spelling).
 */
function widerNetwork(recorded: Network, requested: Network): string | null {
  if (recorded === "host" || requested === "none") return null;
  if (requested === "host" || recorded === "none") return `network ${JSON.stringify(requested)}`;
  const extra = requested.allow.find((entry) => !recorded.allow.includes(entry));
  return extra === undefined ? null : `network allow entry ${JSON.stringify(extra)}, which the recorded allowlist does not have`;
}

/** `path` is one of `paths` or lies beneath one. */
function shownBy(path: string, paths: readonly string[]): boolean {
  return paths.some((shown) => shown === path || isInside(shown, path));
}

/**
 * Why a request on workspace `workspaceId` may not run under `requested`, or null. A record of
 * before schema 4 (null) has nothing to meet yet: its next resume or exec records what it asks.
 */
export function isolationProblem(workspaceId: string, recorded: RecordedIsolation | null, requested: RecordedIsolation): string | null {
  if (recorded === null) return null;
  const weaker = weakerPart(recorded, requested);
  if (weaker === null) return null;
  return `workspace ${JSON.stringify(workspaceId)} was created with ${describeIsolation(recorded)} and keeps it; this request asks for less (${weaker})`;
}

/**
 * Throws LessIsolation unless `requested` is at least the isolation the workspace keeps;
 * `unchanged` ends the text: what did not happen ("launched", "changed").
 */
export function requireIsolation(record: WorkspaceRecord, requested: RecordedIsolation, unchanged: string): void {
  const problem = isolationProblem(record.workspaceId, record.isolation, requested);
  if (problem !== null) throw new LessIsolation(record.workspaceId, `${problem}; nothing was ${unchanged}`);
}
