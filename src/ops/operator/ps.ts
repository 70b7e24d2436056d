import type { Database } from "bun:sqlite";
import type { Invocation } from "../../cli.ts";
import { isPopulated, processesIn, readCounter } from "../../platform/cgroup.ts";
import { provenMembers } from "../../platform/process-group.ts";
import { isSameProcess, listProcesses, type ProcessInfo } from "../../platform/process.ts";
import { unfinishedExecutions, type ExecutionRecord } from "../../store/executions.ts";
import { listWorkspaces } from "../../store/workspaces.ts";
import { leaderOf, wrapperOf } from "../../workspace/executions.ts";
import { formatBytes, formatTable, formatTime, openExistingStore, operatorOptions, printJson } from "./common.ts";

/** A live execution as `ps` shows it. Never its environment: that may hold secrets. */
export interface LiveExecution {
  workspaceId: string;
  execId: string;
  /** The workload's pid (its group and session leader); null while the wrapper is launching it. */
  pid: number | null;
  wrapperPid: number;
  mode: "pipes" | "pty";
  purpose: string;
  argv0: string;
  /** "running", or "starting" while the wrapper has claimed the identity but not launched yet. */
  state: "running" | "starting";
  startedAt: string;
  /** Live processes of the execution: in its cgroup, or proven members of its group and session. */
  processes: number;
  /** The execution's cgroup (cgroup containment), and its counters when those controllers are enabled. */
  cgroup: string | null;
  memoryCurrent: number | null;
  pidsCurrent: number | null;
}

/**
 * Executions that are really alive now. The store only says what was started and not yet
 * seen finishing; liveness is re-derived from the kernel for every record.
 */
export function liveExecutions(db: Database, workspaceId?: string, processes: ProcessInfo[] = listProcesses()): LiveExecution[] {
  const live: LiveExecution[] = [];
  for (const record of unfinishedExecutions(db, workspaceId)) {
    const entry = liveEntry(record, processes);
    if (entry) live.push(entry);
  }
  return live;
}

function liveEntry(record: ExecutionRecord, processes: ProcessInfo[]): LiveExecution | null {
  const launching = record.pid === 0 && isSameProcess(wrapperOf(record));
  let members = 0;
  if (record.cgroup) {
    if (!launching && !isPopulated(record.cgroup)) return null;
    members = processesIn(record.cgroup).length;
  } else if (!launching) {
    members = record.pid === 0 ? 0 : (provenMembers(leaderOf(record), processes)?.length ?? 0);
    if (members === 0) return null;
  }
  return {
    workspaceId: record.workspaceId,
    execId: record.execId,
    pid: record.pid === 0 ? null : record.pid,
    wrapperPid: record.wrapperPid,
    mode: record.mode,
    purpose: record.purpose,
    argv0: record.argv0,
    state: launching ? "starting" : "running",
    startedAt: new Date(record.startedAt).toISOString(),
    processes: members,
    cgroup: record.cgroup,
    memoryCurrent: record.cgroup ? readCounter(record.cgroup, "memory.current") : null,
    pidsCurrent: record.cgroup ? readCounter(record.cgroup, "pids.current") : null,
  };
}

/** `ps [--workspace-id W] [--owner O] [--home DIR] [--json]`: live executions of this home. */
export function ps(invocation: Invocation): number {
  const options = operatorOptions(invocation);
  const workspaceId = invocation.flags.get("workspace-id");
  const owner = invocation.flags.get("owner");
  const { store, home } = openExistingStore(options);
  let executions: LiveExecution[] = [];
  if (store) {
    try {
      executions = liveExecutions(store.db, workspaceId);
      if (owner !== undefined) {
        const owned = new Set(listWorkspaces(store.db, owner).map((w) => w.workspaceId));
        executions = executions.filter((e) => owned.has(e.workspaceId));
      }
    } finally {
      store.db.close();
    }
  }
  if (invocation.switches.has("json")) {
    printJson({ home, executions });
    return 0;
  }
  if (executions.length === 0) {
    console.log(`no live executions${workspaceId === undefined ? "" : ` in workspace ${workspaceId}`} (home ${home})`);
    return 0;
  }
  const usage = executions.some((e) => e.memoryCurrent !== null || e.pidsCurrent !== null);
  const rows = executions.map((e) => [
    e.workspaceId,
    e.execId,
    e.pid === null ? "-" : String(e.pid),
    e.mode,
    e.purpose,
    e.state === "starting" ? "starting" : formatTime(Date.parse(e.startedAt)),
    String(e.processes),
    ...(usage ? [formatBytes(e.memoryCurrent), e.pidsCurrent === null ? "-" : String(e.pidsCurrent)] : []),
    e.argv0,
  ]);
  console.log(formatTable(["WORKSPACE", "EXEC ID", "PID", "MODE", "PURPOSE", "STARTED", "PROCS", ...(usage ? ["MEMORY", "PIDS"] : []), "ARGV0"], rows));
  return 0;
}
