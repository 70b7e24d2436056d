/**
 * `orphans [--remove [--force]]`: the workspaces no reconcile will ever remove. An orphan is a
 * workspace its configuration stopped listing: a reconcile of an edited configuration took
 * over the workspaces the daemon still knew and left it unlisted (src/protocol-ops/reconcile.ts
 * stampListed). Dry run by default: it only lists them. `--remove` destroys each, as `rm` does;
 * one with live executions is refused (left, and the exit is 1) unless `--force`, which stops
 * them first as `rm --force` does.
 */
import { UsageError, type Invocation } from "../argv.ts";
import { readOptions } from "../options.ts";
import { routeWorkspace } from "../remote/placement.ts";
import type { Database } from "bun:sqlite";
import { listWorkspaces, type WorkspaceRecord } from "../store/workspaces.ts";
import { openExistingStore, operatorOptions, printJson, printLines } from "./common.ts";
import { askHosts, hostWords, hostWorkspaces, remoteRuntime, reportHosts, type RemoteRuntime } from "./remote-hosts.ts";
import { destroyAsDaemon } from "./rm.ts";
import { selection } from "./selection.ts";
import { ExecutionList } from "./views.ts";
import { factsOf, liveExecIds, type RecordFacts } from "./workspace-facts.ts";

/** An orphan as `orphans` shows it. */
interface OrphanSummary {
  /** The host it lives on (a remote runtime's, its URL), else absent. */
  host?: string;
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

/** An orphan found: what is shown, what destroy needs, and (remote) why destroy would not reach it. */
interface Found {
  summary: OrphanSummary;
  record: RecordFacts;
  unreachable: string | null;
}

function localOrphans(options: Record<string, unknown>, owner: string): Found[] {
  const { store } = openExistingStore(options);
  if (!store) return [];
  try {
    return listWorkspaces(store.db, owner)
      .filter((record) => record.orphanedAt !== null)
      .map((record) => orphanHere(store.db, record));
  } finally {
    store.db.close();
  }
}

/** An orphan of this home as `orphans` shows it, its live executions read from the same open store. */
function orphanHere(db: Database, record: WorkspaceRecord): Found {
  return {
    summary: {
      workspaceId: record.workspaceId,
      configuration: record.configuration,
      status: record.status,
      root: record.root,
      listedAt: new Date(record.listedAt).toISOString(),
      orphanedAt: new Date(record.orphanedAt!).toISOString(),
      liveExecIds: liveExecIds(db, record.workspaceId),
    },
    record,
    unreachable: null,
  };
}

/**
 * A remote runtime's orphans: each host's `ls` and `ps` of the hosts' owner. One the runtime's
 * operations would not route to its host cannot be removed from here: its placement is not in
 * this local home (made through another; a reconcile keeps the placements of the orphans it
 * leaves). `answered`: every host answered (those that did not are said on stderr).
 */
async function remoteOrphans(runtime: RemoteRuntime): Promise<{ found: Found[]; answered: boolean }> {
  const [listed, running] = await Promise.all([hostWorkspaces(runtime), askHosts(runtime, (host) => hostWords(runtime, host, ["ps", "--json"]), ExecutionList, "ps --json")]);
  const answered = reportHosts("orphans", [...listed, ...running]);
  const found = listed.flatMap(({ host, url, value }, i) =>
    (value?.workspaces ?? [])
      .filter((w) => w.orphanedAt !== null)
      .map((w): Found => {
        const routed = routeWorkspace(runtime.ctx, w.workspaceId).key;
        return {
          summary: {
            host: url,
            workspaceId: w.workspaceId,
            configuration: w.configuration,
            status: w.status,
            root: w.root,
            listedAt: w.listedAt,
            orphanedAt: w.orphanedAt!,
            liveExecIds: (running[i]!.value?.executions ?? []).filter((e) => e.workspaceId === w.workspaceId).map((e) => e.execId),
          },
          record: factsOf(w),
          unreachable: routed === host.key ? null : `no placement of it in home ${runtime.ctx.home}, so the runtime's operations would go to ${routed} (it was made through another local home; remove it from there, or on its host)`,
        };
      }),
  );
  return { found, answered };
}

export async function orphans(invocation: Invocation): Promise<number> {
  const remove = invocation.switches.has("remove");
  const force = invocation.switches.has("force");
  if (force && !remove) throw new UsageError("--force goes with --remove (without --remove nothing is changed)", invocation.command);
  const options = operatorOptions(invocation);
  const chosen = selection(invocation);
  const runtime = chosen.remote === null ? null : await remoteRuntime(chosen);
  const owner = runtime?.owner ?? readOptions(options).owner;
  // A host that did not answer: what it holds is neither shown nor removed, and the exit is 1.
  const { found, answered } = runtime === null ? { found: localOrphans(options, owner), answered: true } : await remoteOrphans(runtime);
  const outcomes = new Map<string, Outcome>();
  if (remove) {
    for (const { summary, record, unreachable } of found) {
      if (unreachable !== null) outcomes.set(summary.workspaceId, "failed");
      else if (summary.liveExecIds.length > 0 && !force) outcomes.set(summary.workspaceId, "refused");
      else outcomes.set(summary.workspaceId, destroyAsDaemon("orphans", options, summary.workspaceId, record, force) ? "removed" : "failed");
    }
  }
  const ok = answered && [...outcomes.values()].every((outcome) => outcome === "removed");
  const summaries = found.map((one) => ({ ...one.summary, ...(one.unreachable === null ? {} : { unreachable: one.unreachable }) }));
  if (invocation.switches.has("json")) {
    printJson({ owner, dryRun: !remove, orphans: summaries.map((orphan) => ({ ...orphan, ...(remove ? { outcome: outcomes.get(orphan.workspaceId) } : {}) })) });
    return ok ? 0 : 1;
  }
  // Ids, hosts, roots and a host's words are what others chose: printLines shows them escaped.
  printLines(report(owner, summaries, remove ? outcomes : null));
  return ok ? 0 : 1;
}

function report(owner: string, found: (OrphanSummary & { unreachable?: string })[], outcomes: Map<string, Outcome> | null): string[] {
  if (found.length === 0) return [`no orphans of owner ${JSON.stringify(owner)}`];
  const lines = found.map((orphan) => {
    const live = orphan.liveExecIds.length ? `, ${orphan.liveExecIds.length} live execution(s)` : "";
    const on = orphan.host === undefined ? "" : ` on ${orphan.host}`;
    const what = `${orphan.workspaceId}${on} (${orphan.status}, configuration ${orphan.configuration?.slice(0, 8) ?? "-"}, not listed since ${orphan.listedAt}${live}) ${orphan.root ?? ""}`.trimEnd();
    const outcome = outcomes?.get(orphan.workspaceId);
    if (outcome === undefined) return `  ${what}${orphan.unreachable === undefined ? "" : `: ${orphan.unreachable}`}`;
    if (outcome === "refused") return `  refused: ${what}: live work; stop it first, or --force stops it (SIGTERM, the grace, SIGKILL)`;
    if (orphan.unreachable !== undefined) return `  failed: ${what}: ${orphan.unreachable}`;
    return `  ${outcome}: ${what}`;
  });
  if (outcomes === null) {
    return [`${found.length} orphan(s) of owner ${JSON.stringify(owner)}, which no reconcile removes:`, ...lines, "dry run: nothing was changed; the same command with --remove removes them"];
  }
  return [`orphans of owner ${JSON.stringify(owner)}:`, ...lines];
}
