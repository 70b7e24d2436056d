import type { Database } from "bun:sqlite";
import type { Invocation } from "../../cli.ts";
import { isSameLiveProcess, listProcesses, type ProcessInfo } from "../../platform/process.ts";
import { unfinishedExecutions, type ExecutionRecord } from "../../store/executions.ts";
import { listWorkspaces } from "../../store/workspaces.ts";
import { workloadMembers } from "../../platform/process-group.ts";
import { formatTable, formatTime, openExistingStore, operatorOptions, printJson } from "./common.ts";

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
  /** Live processes in the workload's group or session. */
  processes: number;
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
  let pid: number | null = record.pid;
  let state: LiveExecution["state"] = "running";
  let members = 0;
  if (record.pid === 0) {
    // Claimed but not launched: alive only while the wrapper that claimed it is.
    if (!isSameLiveProcess(record.wrapperPid, record.wrapperStartTicks)) return null;
    [pid, state] = [null, "starting"];
  } else {
    members = workloadMembers(record, processes).length;
    if (members === 0) return null;
  }
  return {
    workspaceId: record.workspaceId,
    execId: record.execId,
    pid,
    wrapperPid: record.wrapperPid,
    mode: record.mode,
    purpose: record.purpose,
    argv0: record.argv0,
    state,
    startedAt: new Date(record.startedAt).toISOString(),
    processes: members,
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
  const rows = executions.map((e) => [
    e.workspaceId,
    e.execId,
    e.pid === null ? "-" : String(e.pid),
    e.mode,
    e.purpose,
    e.state === "starting" ? "starting" : formatTime(Date.parse(e.startedAt)),
    e.argv0,
  ]);
  console.log(formatTable(["WORKSPACE", "EXEC ID", "PID", "MODE", "PURPOSE", "STARTED", "ARGV0"], rows));
  return 0;
}
