import type { Invocation } from "../argv.ts";
import { readCounter } from "../platform/cgroup.ts";
import { cgroupMemoryBytes } from "../platform/resources.ts";
import { isSameProcess } from "../platform/process.ts";
import { listWorkspaces, type WorkspaceRecord } from "../store/workspaces.ts";
import { destroyRefusal } from "../workspace/refusals.ts";
import { rootProblem } from "../workspace/confinement.ts";
import { diagnose } from "../output.ts";
import { formatBytes, formatTable, missingHomeMessage, openExistingStore, operatorOptions, printJson, printLines, shellQuote, suggestion } from "./common.ts";
import { liveExecutions } from "./ps.ts";
import { hostItems, hostWorkspaces, printHostItems, remoteRuntime, reportHosts, type RemoteRuntime } from "./remote-hosts.ts";
import { selection } from "./selection.ts";
import { syncProblemOf } from "../sandbox/git/sync-state.ts";
import type { WorkspaceSummary } from "./views.ts";

function summarize(home: string, record: WorkspaceRecord, live: number): WorkspaceSummary {
  const input = record.input as { project?: { source?: { kind?: string } }; placement?: { kind?: string } };
  const busy = record.status === "creating" || record.status === "destroying";
  const holderAlive = record.lock !== null && isSameProcess(record.lock);
  return {
    workspaceId: record.workspaceId,
    owner: record.owner,
    dialect: record.dialect,
    runtimeInstanceId: record.instanceId,
    configuration: record.configuration,
    status: record.status,
    interrupted: busy && !holderAlive,
    unfinishedDestroy: destroyRefusal(record)?.message ?? null,
    listedAt: new Date(record.listedAt).toISOString(),
    orphanedAt: record.orphanedAt === null ? null : new Date(record.orphanedAt).toISOString(),
    source: input.project?.source?.kind ?? "?",
    placement: input.placement?.kind ?? "?",
    kind: record.kind,
    root: record.root,
    problem: busy ? null : rootProblem(record),
    liveExecutions: live,
    cgroup: record.cgroup,
    memoryCurrent: record.cgroup ? cgroupMemoryBytes(record.cgroup) : null,
    pidsCurrent: record.cgroup ? readCounter(record.cgroup, "pids.current") : null,
    createdAt: new Date(record.createdAt).toISOString(),
    isolation: record.isolation,
    gitSyncProblem: gitSyncProblem(home, record),
  };
}

/** The sandbox's git work not yet in the user's repository, as ls says it (null: none, or no private git dir). */
function gitSyncProblem(home: string, record: WorkspaceRecord): string | null {
  const problem = syncProblemOf(home, record.workspaceId);
  return problem === null ? null : `${problem.message}${problem.since ? ` (failing since ${problem.since})` : ""}`;
}

/** `ls [--owner O] [--home DIR] [--json]`: the workspaces of this runtime home (a home that does not exist: exit 1). */
export async function ls(invocation: Invocation): Promise<number> {
  const chosen = selection(invocation);
  if (chosen.remote !== null) return await lsRemote(invocation, await remoteRuntime(chosen));
  const options = operatorOptions(invocation);
  const json = invocation.switches.has("json");
  const missing = missingHomeMessage(options);
  if (missing !== null) {
    diagnose(missing);
    return 1;
  }
  const owner = invocation.flags.get("owner") ?? (typeof options.owner === "string" ? options.owner : undefined);
  const { store, home } = openExistingStore(options);
  let workspaces: WorkspaceSummary[] = [];
  let others = 0;
  if (store) {
    try {
      const live = new Map<string, number>();
      for (const execution of liveExecutions(store.db)) {
        live.set(execution.workspaceId, (live.get(execution.workspaceId) ?? 0) + 1);
      }
      workspaces = listWorkspaces(store.db, owner).map((record) => summarize(home, record, live.get(record.workspaceId) ?? 0));
      if (owner !== undefined && workspaces.length === 0) others = listWorkspaces(store.db).length;
    } finally {
      store.db.close();
    }
  }
  if (json) {
    printJson({ home, workspaces });
    return 0;
  }
  if (workspaces.length === 0) {
    // Another owner's workspaces are there but not shown: say so, or the home looks empty.
    const whose = owner === undefined ? "" : ` of owner ${JSON.stringify(owner)}`;
    printLines([`no workspaces${whose} (home ${home}${others ? `, which holds ${others} of other owners` : ""})`]);
    return 0;
  }
  printWorkspaces(workspaces.map((w) => ({ host: null, w })), invocation);
  return 0;
}

/**
 * `ls` of a remote runtime: every host's own `ls --json` with the hosts' home and owner, one
 * table with a HOST column. A host that does not answer is said on stderr (exit 1); the others
 * are still listed. A host whose home does not exist yet has no workspaces.
 */
async function lsRemote(invocation: Invocation, runtime: RemoteRuntime): Promise<number> {
  const answers = await hostWorkspaces(runtime);
  const answered = reportHosts("ls", answers);
  const items = hostItems(answers, (value) => value.workspaces);
  if (invocation.switches.has("json")) {
    printHostItems(runtime, answers, "workspaces", items);
    return answered ? 0 : 1;
  }
  if (items.length > 0) printWorkspaces(items.map(({ host, item }) => ({ host, w: item })), invocation);
  const notes = answers.flatMap(({ host, value, missingHome }) => {
    if (missingHome !== null) return [`${host.key}: no runtime home yet (${missingHome}: no workspace was ever created there)`];
    return value !== null && value.workspaces.length === 0 ? [`${host.key}: no workspaces of owner ${runtime.owner} (home ${value.home})`] : [];
  });
  if (notes.length > 0) printLines(notes);
  return answered ? 0 : 1;
}

/** The table of workspaces (a HOST column first when they live on remote hosts), then a note for each that needs attention. */
function printWorkspaces(rows: readonly { host: string | null; w: WorkspaceSummary }[], invocation: Invocation): void {
  const remote = rows.some((row) => row.host !== null);
  const usage = rows.some(({ w }) => w.memoryCurrent !== null || w.pidsCurrent !== null);
  const cells = rows.map(({ host, w }) => [
    ...(remote ? [host ?? "-"] : []),
    w.workspaceId,
    w.owner,
    w.configuration?.slice(0, 8) ?? "-",
    w.dialect,
    w.interrupted ? `${w.status} (${w.status === "destroying" ? "unfinished" : "interrupted"})` : w.status,
    w.source,
    w.kind ?? w.placement,
    w.isolation?.isolation ?? "-",
    String(w.liveExecutions),
    ...(usage ? [w.memoryCurrent === null ? "-" : formatBytes(w.memoryCurrent), w.pidsCurrent === null ? "-" : String(w.pidsCurrent)] : []),
    w.root ?? "-",
  ]);
  const headers = [...(remote ? ["HOST"] : []), "WORKSPACE", "OWNER", "CONFIG", "DIALECT", "STATUS", "SOURCE", "KIND", "ISOLATION", "LIVE", ...(usage ? ["MEMORY", "PIDS"] : []), "ROOT"];
  console.log(formatTable(headers, cells));
  const notes: string[] = [];
  for (const { host, w } of rows) {
    const at = host === null ? "" : ` (on ${host})`;
    if (w.problem) notes.push(`! ${w.workspaceId}${at}: ${w.problem}`);
    if (w.gitSyncProblem) notes.push(`! ${w.workspaceId}${at}: the work of its sandbox's git is not in your repository yet (kept in the workspace; retried before its next exec and at destroy): ${w.gitSyncProblem}`);
    if (w.unfinishedDestroy) notes.push(`! ${w.unfinishedDestroy}${at} (${suggestion(invocation, `rm -w ${shellQuote(w.workspaceId)}`)})`);
    else if (w.interrupted) notes.push(`! ${w.workspaceId}${at}: create was interrupted (its process is gone); \`new\` or \`rm\` of it again takes over`);
    if (w.orphanedAt) notes.push(`! ${w.workspaceId}${at}: an orphan: its configuration has not listed it since ${w.listedAt}, and another configuration took over its other workspaces on ${w.orphanedAt}; no reconcile removes it (\`${suggestion(invocation, "orphans")}\` does, when you ask)`);
  }
  if (notes.length) printLines(notes);
}
