/**
 * `orphans [--remove [--force]]`: the workspaces no reconcile will ever remove. An orphan is a
 * workspace its configuration stopped listing: a reconcile of an edited configuration took
 * over the workspaces the daemon still knew and left it unlisted (src/ops/reconcile.ts
 * stampListed). Dry run by default: it only lists them. `--remove` destroys each, as `rm` does;
 * one with live executions is refused (left, and the exit is 1) unless `--force`, which stops
 * them first as `rm --force` does.
 */
import { UsageError, type Invocation } from "../argv.ts";
import { readOptions } from "../options.ts";
import { listWorkspaces, type WorkspaceRecord } from "../store/workspaces.ts";
import { openExistingStore, operatorOptions, printJson } from "./common.ts";
import { destroyAsDaemon, liveExecIds } from "./rm.ts";

/** An orphan as `orphans` shows it. */
interface OrphanSummary {
  workspaceId: string;
  /** Its configuration's fingerprint (null: made before schema v2). */
  configuration: string | null;
  status: string;
  root: string | null;
  /** When its configuration last listed it. */
  listedAt: string;
  /** When another configuration took over its configuration and left it unlisted. */
  orphanedAt: string;
  liveExecIds: string[];
}

/** What became of one orphan with --remove. */
type Outcome = "removed" | "refused" | "failed";

function orphansOf(options: Record<string, unknown>, owner: string): WorkspaceRecord[] {
  const { store } = openExistingStore(options);
  if (!store) return [];
  try {
    return listWorkspaces(store.db, owner).filter((record) => record.orphanedAt !== null);
  } finally {
    store.db.close();
  }
}

function summarize(options: Record<string, unknown>, record: WorkspaceRecord): OrphanSummary {
  return {
    workspaceId: record.workspaceId,
    configuration: record.configuration,
    status: record.status,
    root: record.root,
    listedAt: new Date(record.listedAt).toISOString(),
    orphanedAt: new Date(record.orphanedAt!).toISOString(),
    liveExecIds: liveExecIds(options, record.workspaceId),
  };
}

export function orphans(invocation: Invocation): number {
  const remove = invocation.switches.has("remove");
  const force = invocation.switches.has("force");
  if (force && !remove) throw new UsageError("--force goes with --remove (without --remove nothing is changed)", invocation.command);
  const options = operatorOptions(invocation);
  const owner = readOptions(options).owner;
  const records = orphansOf(options, owner);
  const found = records.map((record) => summarize(options, record));
  const outcomes = new Map<string, Outcome>();
  if (remove) {
    for (const [i, orphan] of found.entries()) {
      if (orphan.liveExecIds.length > 0 && !force) outcomes.set(orphan.workspaceId, "refused");
      else outcomes.set(orphan.workspaceId, destroyAsDaemon("orphans", options, orphan.workspaceId, records[i]!, force) ? "removed" : "failed");
    }
  }
  const ok = [...outcomes.values()].every((outcome) => outcome === "removed");
  if (invocation.switches.has("json")) {
    printJson({ owner, dryRun: !remove, orphans: found.map((orphan) => ({ ...orphan, ...(remove ? { outcome: outcomes.get(orphan.workspaceId) } : {}) })) });
    return ok ? 0 : 1;
  }
  console.log(report(owner, found, remove ? outcomes : null));
  return ok ? 0 : 1;
}

function report(owner: string, found: OrphanSummary[], outcomes: Map<string, Outcome> | null): string {
  if (found.length === 0) return `no orphans of owner ${JSON.stringify(owner)}`;
  const lines = found.map((orphan) => {
    const live = orphan.liveExecIds.length ? `, ${orphan.liveExecIds.length} live execution(s)` : "";
    const what = `${orphan.workspaceId} (${orphan.status}, configuration ${orphan.configuration?.slice(0, 8) ?? "-"}, not listed since ${orphan.listedAt}${live}) ${orphan.root ?? ""}`.trimEnd();
    const outcome = outcomes?.get(orphan.workspaceId);
    if (outcome === undefined) return `  ${what}`;
    if (outcome === "refused") return `  refused: ${what}: live work; stop it first, or --force stops it (SIGTERM, the grace, SIGKILL)`;
    return `  ${outcome}: ${what}`;
  });
  if (outcomes === null) {
    return [`${found.length} orphan(s) of owner ${JSON.stringify(owner)}, which no reconcile removes:`, ...lines, "dry run: nothing was changed; the same command with --remove removes them"].join("\n");
  }
  return [`orphans of owner ${JSON.stringify(owner)}:`, ...lines].join("\n");
}
