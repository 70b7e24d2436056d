/**
 * Ownership: who a request speaks for, and which workspaces are theirs.
 *
 * Every workspace is stamped with the owner option, the dialect it was created in and, in the
 * later dialect, the daemon's runtimeInstanceId. Any operation on it needs all three to match
 * (a request in the other dialect is refused). Reconcile's scope is narrower: the daemon
 * reconciles once per configured runtime, with only that runtime's workspace ids, and several
 * runtimes of one daemon may share a home and an owner (an operator naming their machine in
 * each is natural; the later dialect's instance id is the same for all of them too). So
 * reconcile is always limited to the workspaces of its own configuration (a fingerprint of the
 * options map and the command), whatever the owner.
 */
import type { Dialect, LifecycleRequest, SpawnEnvelope } from "../protocol/index.ts";

/** The ownership a request carries. */
export interface Ownership {
  owner: string;
  dialect: Dialect;
  /** runtimeInstanceId (later dialect); null in the seed dialect. */
  instanceId: string | null;
  /** Fingerprint of the daemon configuration the request came from (`configurationOf`). */
  configuration: string;
}

/** The recorded side of ownership (a workspace row). */
interface Stamp {
  workspaceId: string;
  owner: string;
  dialect: Dialect;
  instanceId: string | null;
  configuration: string | null;
  /** Set once another configuration took over its configuration without listing it (reconcile.ts). */
  orphanedAt?: number | null;
}

/** The ownership of a lifecycle request or spawn envelope whose options say `owner`. */
export function ownershipOf(message: LifecycleRequest | SpawnEnvelope, owner: string): Ownership {
  const later = "runtimeInstanceId" in message;
  return {
    owner,
    dialect: later ? "later" : "seed",
    instanceId: later ? message.runtimeInstanceId : null,
    configuration: configurationOf(message.options),
  };
}

/**
 * The configuration a request comes from, as a fingerprint: SHA-256 of the command the daemon ran
 * (argv[0]) and the options map with its keys sorted at every level, so that reordering the
 * daemon's config file changes nothing and changing any option's value does.
 */
export function configurationOf(options: Record<string, unknown>, command = process.argv0): string {
  const hasher = new Bun.CryptoHasher("sha256");
  hasher.update(`paseo-host-runtime configuration 1\0${command}\0${sortedJson(options)}`);
  return hasher.digest("hex");
}

/** JSON text with object keys sorted at every depth (arrays keep their order). */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(",")}]`;
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${sortedJson(record[key])}`)
    .join(",")}}`;
}

/** Which part of the recorded ownership `who` does not match, and why it may not touch the workspace; null when it may. */
export function ownershipMismatch(record: Stamp, who: Ownership): { part: "owner" | "dialect" | "instance"; problem: string } | null {
  const name = JSON.stringify(record.workspaceId);
  if (record.owner !== who.owner) {
    return { part: "owner", problem: `ownership mismatch: workspace ${name} belongs to owner ${JSON.stringify(record.owner)}, not ${JSON.stringify(who.owner)}` };
  }
  if (record.dialect !== who.dialect) {
    return { part: "dialect", problem: `workspace ${name} was created in the ${record.dialect} protocol dialect (${DIALECT_HINT[record.dialect]}) and this request is in the ${who.dialect} dialect; a workspace keeps the dialect it was created in` };
  }
  if (record.instanceId !== who.instanceId) {
    return { part: "instance", problem: `ownership mismatch: workspace ${name} belongs to runtime instance ${JSON.stringify(record.instanceId)}, not ${JSON.stringify(who.instanceId)}` };
  }
  return null;
}

/** Why `who` may not touch the recorded workspace, or null when it may. */
export function ownershipProblem(record: Stamp, who: Ownership): string | null {
  return ownershipMismatch(record, who)?.problem ?? null;
}

const DIALECT_HINT: Record<Dialect, string> = {
  seed: "requests without runtimeInstanceId",
  later: "requests with runtimeInstanceId",
};

/**
 * Whether reconcile on behalf of `who` may remove the recorded workspace when it is not listed:
 * same owner, dialect and instance, and the same configuration. A workspace of unknown
 * configuration (made before schema v2) is in nobody's scope until a reconcile lists it, and an
 * orphan (left unlisted when another configuration took over its own) is in nobody's scope
 * at all: only an operator removes it (`orphans`, `rm`).
 */
export function inReconcileScope(record: Stamp, who: Ownership): boolean {
  if (ownershipProblem(record, who) !== null) return false;
  return record.configuration === who.configuration && (record.orphanedAt ?? null) === null;
}
