import type { Database } from "bun:sqlite";
import type { Invocation } from "../argv.ts";
import { diagnose } from "../output.ts";
import { isPopulated, processesIn, readCounter } from "../platform/cgroup.ts";
import { provenMembers } from "../platform/process-group.ts";
import { isSameProcess, listProcesses, type ProcessInfo } from "../platform/process.ts";
import { cgroupMemoryBytes, commandLine, processMemory } from "../platform/resources.ts";
import { unfinishedExecutions, type ExecutionRecord } from "../store/executions.ts";
import { listWorkspaces } from "../store/workspaces.ts";
import { leaderOf, wrapperOf } from "../workspace/executions.ts";
import { parseFormat, type Format, type FormatField } from "./ps-format.ts";
import { formatAge, formatBytes, formatTable, missingHomeMessage, openExistingStore, operatorOptions, printJson, printLines, quoteArgv } from "./common.ts";
import { printable } from "../printable.ts";

/** A live execution as `ps` shows it. Never its environment: that may hold secrets. */
interface LiveExecution {
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
  /** The execution's cgroup (cgroup containment), and its pids.current when that controller is enabled. */
  cgroup: string | null;
  pidsCurrent: number | null;
}

/** What `ps` adds for people: the leader's argv as it runs now, and the workload's memory. */
interface ExecutionDetails extends LiveExecution {
  /** The leader's exact argv (Linux), or null (starting, gone, or a platform that gives only text). */
  argv: string[] | null;
  /** The command line, shell-quoted when the argv is exact. */
  command: string;
  /** The memory of the workload's processes (or its cgroup's memory.current), bytes. */
  memoryBytes: number | null;
  /** Where memoryBytes comes from: "cgroup", "pss" (proportional set sizes, summed) or "rss" (resident sizes summed: an upper bound). */
  memorySource: "pss" | "rss" | "cgroup" | null;
}

interface Live {
  entry: LiveExecution;
  record: ExecutionRecord;
  members: ProcessInfo[];
}

/**
 * Executions that are really alive now. The store only says what was started and not yet
 * seen finishing; liveness is re-derived from the kernel for every record.
 */
export function liveExecutions(db: Database, workspaceId?: string, snapshot: () => ProcessInfo[] = listProcesses): LiveExecution[] {
  return live(db, workspaceId, snapshot).map(({ entry }) => entry);
}

function live(db: Database, workspaceId: string | undefined, snapshot: () => ProcessInfo[]): Live[] {
  // The store first, then the processes: a launch recorded before the snapshot has its process
  // in it (the wrapper records a pid only once it runs). The other order would show a launch
  // committed in between as running with no processes and no memory.
  const records = unfinishedExecutions(db, workspaceId);
  const processes = snapshot();
  const found: Live[] = [];
  for (const record of records) {
    const one = liveEntry(record, processes);
    if (one) found.push(one);
  }
  return found;
}

function liveEntry(record: ExecutionRecord, processes: ProcessInfo[]): Live | null {
  // Claimed but not launched: "starting" while the wrapper that claimed it lives.
  const launching = record.pid === 0 && isSameProcess(wrapperOf(record));
  const pid: number | null = record.pid === 0 ? null : record.pid;
  let members: ProcessInfo[] = [];
  if (record.cgroup) {
    // Whatever runs in its cgroup is the execution's, a wrapper that died mid-launch included.
    if (!launching && !isPopulated(record.cgroup)) return null;
    const inside = new Set(processesIn(record.cgroup));
    members = processes.filter((info) => inside.has(info.pid) && info.state !== "Z");
  } else if (!launching) {
    if (record.pid === 0) return null;
    members = provenMembers(leaderOf(record), processes) ?? [];
    if (members.length === 0) return null;
  }
  const state: LiveExecution["state"] = launching ? "starting" : "running";
  const entry: LiveExecution = {
    workspaceId: record.workspaceId,
    execId: record.execId,
    pid,
    wrapperPid: record.wrapperPid,
    mode: record.mode,
    purpose: record.purpose,
    argv0: record.argv0,
    state,
    startedAt: new Date(record.startedAt).toISOString(),
    processes: members.length,
    cgroup: record.cgroup,
    pidsCurrent: record.cgroup ? readCounter(record.cgroup, "pids.current") : null,
  };
  return { entry, record, members };
}

/**
 * The memory of one execution: its cgroup's memory.current when it has a cgroup of its own,
 * else the proportional set sizes of its live processes (platform/resources.ts).
 */
function executionMemory(members: readonly ProcessInfo[], cgroupDir: string | null = null): { bytes: number | null; source: ExecutionDetails["memorySource"] } {
  if (cgroupDir !== null) {
    const bytes = cgroupMemoryBytes(cgroupDir);
    if (bytes !== null) return { bytes, source: "cgroup" };
  }
  const memory = processMemory(members.map((member) => member.pid));
  return { bytes: memory?.bytes ?? null, source: memory?.source ?? null };
}

function withDetails({ entry, members, record }: Live): ExecutionDetails {
  const line = entry.pid === null ? null : commandLine(entry.pid);
  const memory = executionMemory(members, record.cgroup);
  return {
    ...entry,
    argv: line?.argv ?? null,
    // The workload can rewrite its own argv: quoted, with control characters escaped.
    command: line === null ? printable(entry.argv0) : line.argv ? quoteArgv(line.argv) : printable(line.text),
    memoryBytes: memory.bytes,
    memorySource: memory.source,
  };
}

/** `--format` field → its text. The JSON keys, plus `age` and `memory` as people read them. */
const FIELDS: Record<FormatField, (e: ExecutionDetails, now: number) => string> = {
  workspaceId: (e) => e.workspaceId,
  execId: (e) => e.execId,
  pid: (e) => (e.pid === null ? "-" : String(e.pid)),
  wrapperPid: (e) => String(e.wrapperPid),
  mode: (e) => e.mode,
  purpose: (e) => e.purpose,
  state: (e) => e.state,
  startedAt: (e) => e.startedAt,
  age: (e, now) => formatAge(now - Date.parse(e.startedAt)),
  processes: (e) => String(e.processes),
  memory: (e) => (e.memoryBytes === null ? "-" : formatBytes(e.memoryBytes)),
  memoryBytes: (e) => (e.memoryBytes === null ? "-" : String(e.memoryBytes)),
  pids: (e) => (e.pidsCurrent === null ? "-" : String(e.pidsCurrent)),
  cgroup: (e) => e.cgroup ?? "-",
  argv0: (e) => e.argv0,
  command: (e) => e.command,
};

/** The default table: header → field. */
const DEFAULT_COLUMNS: [string, FormatField][] = [
  ["WORKSPACE", "workspaceId"],
  ["EXEC ID", "execId"],
  ["PID", "pid"],
  ["MODE", "mode"],
  ["PURPOSE", "purpose"],
  ["AGE", "age"],
  ["MEMORY", "memory"],
  ["COMMAND", "command"],
];

function render(executions: ExecutionDetails[], format: Format): string {
  const now = Date.now();
  if (format.kind === "template") {
    return executions.map((e) => format.template.replace(/\{\{\s*\.?([\w-]+)\s*\}\}/g, (_, name: string) => printable(FIELDS[name as FormatField](e, now)))).join("\n");
  }
  const rows = executions.map((e) => format.columns.map(([, field]) => printable(FIELDS[field](e, now))));
  return formatTable(format.columns.map(([header]) => header), rows);
}

/** `ps [-w W] [-q] [--format F] [--json]`: live executions of this home. */
export function ps(invocation: Invocation): number {
  const options = operatorOptions(invocation);
  const missing = missingHomeMessage(options);
  if (missing !== null) {
    diagnose(missing);
    return 1;
  }
  const workspaceId = invocation.flags.get("workspace-id");
  const owner = invocation.flags.get("owner") ?? (typeof options.owner === "string" ? options.owner : undefined);
  const { store, home } = openExistingStore(options);
  let executions: ExecutionDetails[] = [];
  if (store) {
    try {
      let found = live(store.db, workspaceId, listProcesses);
      if (owner !== undefined) {
        const owned = new Set(listWorkspaces(store.db, owner).map((w) => w.workspaceId));
        found = found.filter(({ entry }) => owned.has(entry.workspaceId));
      }
      executions = found.map(withDetails);
    } finally {
      store.db.close();
    }
  }
  if (invocation.switches.has("json")) {
    printJson({ home, executions });
    return 0;
  }
  if (invocation.switches.has("quiet")) {
    if (executions.length) printLines(executions.map((e) => e.execId));
    return 0;
  }
  const format = invocation.flags.get("format");
  if (format !== undefined) {
    const text = render(executions, parseFormat(format));
    if (text !== "") console.log(text);
    return 0;
  }
  if (executions.length === 0) {
    printLines([`no live executions${workspaceId === undefined ? "" : ` in workspace ${workspaceId}`} (home ${home})`]);
    return 0;
  }
  console.log(render(executions, { kind: "table", columns: DEFAULT_COLUMNS }));
  return 0;
}
