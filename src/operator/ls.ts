import type { Invocation } from "../argv.ts";
import { readCounter } from "../platform/cgroup.ts";
import { cgroupMemoryBytes } from "../platform/resources.ts";
import { isSameProcess } from "../platform/process.ts";
import { listWorkspaces, type WorkspaceRecord } from "../store/workspaces.ts";
import { unfinishedDestroy } from "../workspace/lock.ts";
import { rootProblem } from "../workspace/confinement.ts";
import { diagnose } from "../output.ts";
import { formatBytes, formatTable, missingHomeMessage, openExistingStore, operatorOptions, printJson, printLines, shellQuote } from "./common.ts";
import { liveExecutions } from "./ps.ts";

/** A workspace as `ls` shows it. */
interface WorkspaceSummary {
  workspaceId: string;
  owner: string;
  /** The protocol dialect it was created in (seed | later); only requests in it reach it. */
  dialect: string;
  /** The later dialect's runtimeInstanceId of the daemon that made it, or null. */
  runtimeInstanceId: string | null;
  /** Fingerprint of the daemon configuration whose reconcile may remove it (null: made before schema v2, not listed since). */
  configuration: string | null;
  /** creating | ready | paused | destroying. */
  status: string;
  /** For creating/destroying rows: whether the process doing that work is gone (the next operation takes over). */
  interrupted: boolean;
  /** For a destroying row: what inspect answers as `error` (why the destroy has not finished, what to do). */
  unfinishedDestroy: string | null;
  /** When its configuration last listed it (its create, or a reconcile listing it). */
  listedAt: string;
  /** When another configuration of its owner took over its configuration and left it unlisted (an orphan), else null. */
  orphanedAt: string | null;
  /** host-directory | directory | git (where the files came from). */
  source: string;
  /** existing | branch | checkout | resolved-worktree (as asked for in create). */
  placement: string;
  /** adopted | copy | clone | worktree (what the runtime made), null until created. */
  kind: string | null;
  root: string | null;
  /** Why a ready or paused root cannot be used, or null. */
  problem: string | null;
  liveExecutions: number;
  /** The workspace's cgroup (cgroup containment), and what it uses now when its controllers are enabled. */
  cgroup: string | null;
  memoryCurrent: number | null;
  pidsCurrent: number | null;
  createdAt: string;
  /** The isolation it keeps (workspace/isolation.ts); null: made before schema 3, recorded by its next resume or exec. */
  isolation: WorkspaceRecord["isolation"];
}

function summarize(record: WorkspaceRecord, live: number): WorkspaceSummary {
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
    unfinishedDestroy: unfinishedDestroy(record),
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
  };
}

/** `ls [--owner O] [--home DIR] [--json]`: the workspaces of this runtime home (a home that does not exist: exit 1). */
export function ls(invocation: Invocation): number {
  const options = operatorOptions(invocation);
  const missing = missingHomeMessage(options);
  if (missing !== null) {
    diagnose(missing);
    return 1;
  }
  const owner = invocation.flags.get("owner") ?? (typeof options.owner === "string" ? options.owner : undefined);
  const { store, home } = openExistingStore(options);
  let workspaces: WorkspaceSummary[] = [];
  if (store) {
    try {
      const live = new Map<string, number>();
      for (const execution of liveExecutions(store.db)) {
        live.set(execution.workspaceId, (live.get(execution.workspaceId) ?? 0) + 1);
      }
      workspaces = listWorkspaces(store.db, owner).map((record) => summarize(record, live.get(record.workspaceId) ?? 0));
    } finally {
      store.db.close();
    }
  }
  if (invocation.switches.has("json")) {
    printJson({ home, workspaces });
    return 0;
  }
  if (workspaces.length === 0) {
    printLines([`no workspaces (home ${home})`]);
    return 0;
  }
  const usage = workspaces.some((w) => w.memoryCurrent !== null || w.pidsCurrent !== null);
  const rows = workspaces.map((w) => [
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
  console.log(formatTable(["WORKSPACE", "OWNER", "CONFIG", "DIALECT", "STATUS", "SOURCE", "KIND", "ISOLATION", "LIVE", ...(usage ? ["MEMORY", "PIDS"] : []), "ROOT"], rows));
  const notes: string[] = [];
  for (const w of workspaces) {
    if (w.problem) notes.push(`! ${w.workspaceId}: ${w.problem}`);
    if (w.unfinishedDestroy) notes.push(`! ${w.unfinishedDestroy} (paseo-host-runtime rm -w ${shellQuote(w.workspaceId)})`);
    else if (w.interrupted) notes.push(`! ${w.workspaceId}: create was interrupted (its process is gone); \`new\` or \`rm\` of it again takes over`);
    if (w.orphanedAt) notes.push(`! ${w.workspaceId}: an orphan: its configuration has not listed it since ${w.listedAt}, and another configuration took over its other workspaces on ${w.orphanedAt}; no reconcile removes it (\`paseo-host-runtime orphans\` does, when you ask)`);
  }
  if (notes.length) printLines(notes);
  return 0;
}
