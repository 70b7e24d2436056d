import type { Database } from "bun:sqlite";
import type { Invocation } from "../argv.ts";
import { diagnose } from "../output.ts";
import { isPopulated, processesIn, readCounter } from "../platform/cgroup.ts";
import { provenMembers } from "../containment/group-scope.ts";
import { isSameProcess, listProcesses, type ProcessInfo } from "../platform/process.ts";
import { cgroupMemoryBytes, commandLine, processMemory } from "../platform/resources.ts";
import { unfinishedExecutions, type ExecutionRecord } from "../store/executions.ts";
import { listWorkspaces, type WorkspaceRecord } from "../store/workspaces.ts";
import { syncProblemOf } from "../sandbox/git/sync-state.ts";
import { leaderOf, wrapperOf } from "../containment/executions.ts";
import { parseFormat, type Format, type FormatField } from "./ps-format.ts";
import { formatAge, formatBytes, formatTable, missingHomeMessage, openExistingStore, operatorOptions, printJson, printLines, quoteArgv } from "./common.ts";
import { printable } from "../printable.ts";
import { askHosts, hostItems, hostWords, printHostItems, remoteRuntime, reportHosts, type RemoteRuntime } from "./remote-hosts.ts";
import { selection } from "./selection.ts";
import { ExecutionList, type EgressCounts, type ExecutionDetails } from "./views.ts";
import { readEgressStats } from "../sandbox/network/egress-plan.ts";
import { storageDir } from "../workspace/paths.ts";

/** A live execution as the store and the kernel tell it (views.ts ExecutionDetails without what `ps` adds for people). */
type LiveExecution = Omit<ExecutionDetails, "argv" | "command" | "memoryBytes" | "memorySource" | "network">;

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

/**
 * What the way out of an execution under a network allowlist counted so far: its counts file
 * lives in the workspace's storage while the execution does (sandbox/network/egress.ts); none
 * means no allowlist. Hosts in name order, as an array: a host is named by the workload.
 */
function egressCounts(home: string, entry: LiveExecution): EgressCounts | null {
  const stats = readEgressStats(storageDir(home, entry.workspaceId), entry.execId);
  if (stats === null) return null;
  const hosts = Object.entries(stats.hosts).map(([host, counts]) => ({ host, connections: counts.connections, bytesIn: counts.bytesIn, bytesOut: counts.bytesOut }));
  return { denied: stats.denied, failed: stats.failed, hosts: hosts.sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0)) };
}

function withDetails({ entry, members, record }: Live, home: string): ExecutionDetails {
  const line = entry.pid === null ? null : commandLine(entry.pid);
  const memory = executionMemory(members, record.cgroup);
  return {
    ...entry,
    argv: line?.argv ?? null,
    // The workload can rewrite its own argv: quoted, with control characters escaped.
    command: line === null ? printable(entry.argv0) : line.argv ? quoteArgv(line.argv) : printable(line.text),
    memoryBytes: memory.bytes,
    memorySource: memory.source,
    network: egressCounts(home, entry),
  };
}

/** One execution as printed: its details, and the host it runs on (a remote runtime's), else null. */
interface Row {
  host: string | null;
  e: ExecutionDetails;
}

/** `--format` field → its text. The JSON keys, plus `age` and `memory` as people read them. */
const FIELDS: Record<FormatField, (row: Row, now: number) => string> = {
  host: ({ host }) => host ?? "-",
  workspaceId: ({ e }) => e.workspaceId,
  execId: ({ e }) => e.execId,
  pid: ({ e }) => (e.pid === null ? "-" : String(e.pid)),
  wrapperPid: ({ e }) => String(e.wrapperPid),
  mode: ({ e }) => e.mode,
  purpose: ({ e }) => e.purpose,
  state: ({ e }) => e.state,
  startedAt: ({ e }) => e.startedAt,
  age: ({ e }, now) => formatAge(now - Date.parse(e.startedAt)),
  processes: ({ e }) => String(e.processes),
  memory: ({ e }) => (e.memoryBytes === null ? "-" : formatBytes(e.memoryBytes)),
  memoryBytes: ({ e }) => (e.memoryBytes === null ? "-" : String(e.memoryBytes)),
  pids: ({ e }) => (e.pidsCurrent === null ? "-" : String(e.pidsCurrent)),
  cgroup: ({ e }) => e.cgroup ?? "-",
  argv0: ({ e }) => e.argv0,
  command: ({ e }) => e.command,
};

/** The default table: header → field (HOST first for a remote runtime). */
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

/** A column of the default table that is not a `--format` field. */
type Cell = (row: Row, now: number) => string;

/**
 * The default table's REFUSED column, shown only when some execution runs under a network
 * allowlist (so the table is unchanged for everyone else): requests its policy refused, and
 * those whose upstream could not be reached; the runtime log (`logs`) has a line for each.
 */
const REFUSED: [string, Cell] = ["REFUSED", ({ e }) => (e.network ? `${e.network.denied}${e.network.failed > 0 ? ` (+${e.network.failed} failed)` : ""}` : "-")];

function render(rows: readonly Row[], format: Format, extra: [string, Cell][] = []): string {
  const now = Date.now();
  if (format.kind === "template") {
    return rows.map((row) => format.template.replace(/\{\{\s*\.?([\w-]+)\s*\}\}/g, (_, name: string) => printable(FIELDS[name as FormatField](row, now)))).join("\n");
  }
  const columns: [string, Cell][] = [...format.columns.map(([header, field]): [string, Cell] => [header, FIELDS[field]])];
  // Extra columns go before the last (COMMAND), which may be long.
  columns.splice(Math.max(0, columns.length - 1), 0, ...extra);
  const cells = rows.map((row) => columns.map(([, cell]) => printable(cell(row, now))));
  return formatTable(columns.map(([header]) => header), cells);
}

/** `ps [-w W] [-q] [--format F] [--json]`: live executions of this home. */
export async function ps(invocation: Invocation): Promise<number> {
  const chosen = selection(invocation);
  if (chosen.remote !== null) return await psRemote(invocation, await remoteRuntime(chosen));
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
  let failing: string[] = [];
  if (store) {
    try {
      const workspaces = listWorkspaces(store.db, owner);
      let found = live(store.db, workspaceId, listProcesses);
      if (owner !== undefined) {
        const owned = new Set(workspaces.map((w) => w.workspaceId));
        found = found.filter(({ entry }) => owned.has(entry.workspaceId));
      }
      executions = found.map((one) => withDetails(one, home));
      failing = gitSyncNotes(home, workspaces.filter((w) => workspaceId === undefined || w.workspaceId === workspaceId));
    } finally {
      store.db.close();
    }
  }
  if (invocation.switches.has("json")) {
    printJson({ home, executions });
    return 0;
  }
  const none = `no live executions${workspaceId === undefined ? "" : ` in workspace ${workspaceId}`} (home ${home})`;
  printExecutions(invocation, executions.map((e) => ({ host: null, e })), none);
  if (failing.length > 0 && !invocation.switches.has("quiet") && !invocation.flags.has("format")) printLines(failing);
  return 0;
}

/** A note for each workspace whose executions' git work has not reached the user's repository (the sync after them failed). */
function gitSyncNotes(home: string, workspaces: readonly WorkspaceRecord[]): string[] {
  return workspaces.flatMap((w) => {
    const problem = syncProblemOf(home, w.workspaceId);
    return problem === null ? [] : [`! ${w.workspaceId}: the git work of its executions is not in your repository yet (since ${problem.since}; \`ls\` says why)`];
  });
}

/**
 * `ps` of a remote runtime: every host's own `ps --json` with the hosts' home and owner, with a
 * HOST column. A host that does not answer is said on stderr (exit 1); the others are shown.
 */
async function psRemote(invocation: Invocation, runtime: RemoteRuntime): Promise<number> {
  const workspaceId = invocation.flags.get("workspace-id");
  const words = ["ps", "--json", ...(workspaceId === undefined ? [] : ["--workspace-id", workspaceId])];
  const answers = await askHosts(runtime, (host) => hostWords(runtime, host, words), ExecutionList, "ps --json");
  const answered = reportHosts("ps", answers);
  const items = hostItems(answers, (value) => value.executions);
  if (invocation.switches.has("json")) {
    printHostItems(runtime, answers, "executions", items);
    return answered ? 0 : 1;
  }
  const hosts = answers.filter((answer) => answer.problem === null).map((answer) => answer.host.key);
  printExecutions(invocation, items.map(({ host, item }) => ({ host, e: item })), `no live executions${workspaceId === undefined ? "" : ` in workspace ${workspaceId}`} (owner ${runtime.owner} on ${hosts.join(", ") || "no host"})`);
  return answered ? 0 : 1;
}

/** The executions as -q, --format or the default table (HOST first when they run on remote hosts) ask. */
function printExecutions(invocation: Invocation, rows: readonly Row[], none: string): void {
  if (invocation.switches.has("quiet")) {
    if (rows.length) printLines(rows.map(({ e }) => e.execId));
    return;
  }
  const format = invocation.flags.get("format");
  if (format !== undefined) {
    const text = render(rows, parseFormat(format));
    if (text !== "") console.log(text);
    return;
  }
  if (rows.length === 0) {
    printLines([none]);
    return;
  }
  const remote = rows.some((row) => row.host !== null);
  const policed = rows.some((row) => row.e.network);
  console.log(render(rows, { kind: "table", columns: [...(remote ? ([["HOST", "host"]] as [string, FormatField][]) : []), ...DEFAULT_COLUMNS] }, policed ? [REFUSED] : []));
}
