/**
 * What is true about processes right now. Linux reads /proc; macOS (unverified here) asks ps(1).
 * Identity = (boot id, pid, start time): a pid alone can be recycled.
 */
import { closeSync, openSync, readFileSync, readSync, readdirSync } from "node:fs";
import { signalNumber } from "./signals.ts";
import { hasErrno, PROCESS_GONE, tolerating } from "./errno.ts";
import { isLinux } from "./os.ts";
import { once } from "./lazy.ts";

/** A process as the kernel reports it. `startTicks` is comparable only within one boot. */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  /** Single-letter state; "Z" = zombie (finished, not yet reaped). */
  state: string;
  /** Controlling terminal device number, 0 for none. */
  tty: number;
  /** Foreground process group of the controlling terminal, -1 for none. */
  tpgid: number;
  startTicks: number;
}

let cachedBootId: string | undefined;

/** Identifies the current boot, so identities from an earlier boot never match. */
export function bootId(): string {
  if (cachedBootId) return cachedBootId;
  if (isLinux) cachedBootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  else cachedBootId = Bun.spawnSync(["sysctl", "-n", "kern.boottime"], { stdin: "ignore", stdout: "pipe" }).stdout.toString().trim();
  return cachedBootId;
}

/**
 * Who a process is, as recorded: a pid alone can be recycled, so every record that names a
 * process (workload, wrapper, lock holder, git child) keeps its start time and boot too.
 */
export interface ProcessIdentity {
  pid: number;
  /** Start time in clock ticks since boot (Linux), or seconds since the epoch (macOS). */
  startTicks: number;
  bootId: string;
}

let self: ProcessIdentity | undefined;

/** The identity of a process read on this boot (listed, or read by pid, just now). */
export function identityOfProcess(info: Pick<ProcessInfo, "pid" | "startTicks">): ProcessIdentity {
  return { pid: info.pid, startTicks: info.startTicks, bootId: bootId() };
}

/** This process's own identity (cached: it cannot change while we run). */
export function selfIdentity(): ProcessIdentity {
  if (self) return self;
  const info = readProcess(process.pid);
  if (!info) throw new Error(`cannot read the identity of this process (pid ${process.pid})`);
  self = { pid: process.pid, startTicks: info.startTicks, bootId: bootId() };
  return self;
}

/** One process, or null when there is no such pid. */
export function readProcess(pid: number): ProcessInfo | null {
  if (!isLinux) return listWithPs(pid)[0] ?? null;
  const text = readStat(pid);
  return text === null ? null : parseStat(pid, text);
}

/** One reused buffer: a sweep reads every process's stat, and allocation per read doubled its cost. */
const statBuffer = once(() => Buffer.allocUnsafe(4096));

/** The text of /proc/PID/stat, or null when there is no such process (any other failure is thrown). */
function readStat(pid: number): string | null {
  const fd = tolerating(PROCESS_GONE, null, () => openSync(`/proc/${pid}/stat`, "r"));
  if (fd === null) return null;
  try {
    const buffer = statBuffer();
    return tolerating(PROCESS_GONE, null, () => buffer.toString("latin1", 0, readSync(fd, buffer, 0, buffer.length, 0)));
  } finally {
    closeSync(fd);
  }
}

/** Parses /proc/<pid>/stat; the command name may hold spaces and parentheses, so cut at the last ")". */
function parseStat(pid: number, text: string): ProcessInfo | null {
  const close = text.lastIndexOf(")");
  if (close === -1) return null;
  const fields = text.slice(close + 2).split(" ");
  const field = (n: number) => Number(fields[n - 3]);
  return {
    pid,
    state: fields[0] ?? "?",
    ppid: field(4),
    pgid: field(5),
    sid: field(6),
    tty: field(7),
    tpgid: field(8),
    startTicks: field(22),
  };
}

/** Every process visible to us. */
export function listProcesses(): ProcessInfo[] {
  if (!isLinux) return listWithPs();
  const out: ProcessInfo[] = [];
  for (const name of readdirSync("/proc")) {
    const code = name.charCodeAt(0);
    if (code < 48 || code > 57) continue;
    const info = readProcess(Number(name));
    if (info) out.push(info);
  }
  return out;
}

/** True when `id` is this very process. */
export function isSelf(id: ProcessIdentity): boolean {
  const me = selfIdentity();
  return id.pid === me.pid && id.startTicks === me.startTicks && id.bootId === me.bootId;
}

/**
 * The process `id` names, while it still holds its pid (running, or a zombie not yet reaped),
 * else null: same boot, same pid, same start time. The one identity check every record of a
 * process goes through, here and in isSameProcess and holdsPid.
 */
export function processOf(id: ProcessIdentity): ProcessInfo | null {
  if (id.pid <= 0 || id.bootId !== bootId()) return null;
  const info = readProcess(id.pid);
  return info !== null && info.startTicks === id.startTicks ? info : null;
}

/**
 * True when `id` names a process that is running now: not a zombie (a zombie has finished;
 * only its parent's wait is missing).
 */
export function isSameProcess(id: ProcessIdentity): boolean {
  const info = processOf(id);
  return info !== null && info.state !== "Z";
}

/**
 * True when the process `id` names still holds its pid: running or a zombie not yet reaped.
 * While it does, no other process can be given that number, nor a group or session of it.
 */
export function holdsPid(id: ProcessIdentity): boolean {
  return processOf(id) !== null;
}

/**
 * Sends a signal, returning false when the target no longer exists. By number: Bun's
 * process.kill does not know every name of the signal table (SIGSTKFLT, SIGPWR).
 */
export function sendSignal(pid: number, signal: NodeJS.Signals | number): boolean {
  try {
    process.kill(pid, typeof signal === "number" ? signal : signalNumber(signal)!);
    return true;
  } catch (error) {
    if (hasErrno(error, ["ESRCH"])) return false;
    throw new Error(`kill(${pid}, ${signal}) failed: ${(error as Error).message}`);
  }
}

/** macOS (unverified here): ps gives start time in seconds (lstart), enough to tell recycled pids apart. */
const PS_COLUMNS = "pid=,ppid=,pgid=,sess=,stat=,tdev=,tpgid=,lstart=";

function listWithPs(pid?: number): ProcessInfo[] {
  const argv = pid === undefined ? ["ps", "-A", "-o", PS_COLUMNS] : ["ps", "-o", PS_COLUMNS, "-p", String(pid)];
  const result = Bun.spawnSync(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  // `ps -p` exits 1 when the pid does not exist: that is an answer, not a failure.
  if (result.exitCode !== 0 && pid === undefined) throw new Error(`${argv.join(" ")} failed: ${result.stderr.toString()}`);
  const out: ProcessInfo[] = [];
  for (const line of result.stdout.toString().split("\n")) {
    const parts = line.trim().split(/\s+/);
    if (parts.length < 8) continue;
    const [id, ppid, pgid, sid, stat, tty, tpgid, ...start] = parts;
    out.push({
      pid: Number(id),
      ppid: Number(ppid),
      pgid: Number(pgid),
      sid: Number(sid),
      state: stat!.charAt(0),
      tty: tty === "??" || tty === "-" ? 0 : 1,
      tpgid: Number(tpgid),
      startTicks: Math.floor(Date.parse(start.join(" ")) / 1000),
    });
  }
  return out;
}

/**
 * The host pid of the process that is `nsPid` in the pid namespace of the sandbox whose bwrap
 * is `monitor` (src/sandbox/sandboxed-workload.ts), started at `startTicks` (the same clock
 * inside and out), and the host pid of that namespace's init. bwrap's one child is the init;
 * the sandbox init is the init's child and the workload the sandbox init's: two levels are
 * searched below the init.
 */
export function findInSandbox(monitor: number, nsPid: number, startTicks: number): { pid: number; init: number } | null {
  const [init] = childrenOf(monitor);
  if (init === undefined) return null;
  let level = childrenOf(init);
  for (let depth = 0; depth < 2 && level.length > 0; depth++) {
    for (const pid of level) {
      if (innermostPid(pid) === nsPid && holdsPid(identityOfProcess({ pid, startTicks }))) return { pid, init };
    }
    level = level.flatMap(childrenOf);
  }
  return null;
}

/** Children of `pid` made by its main thread (/proc/…/children), or by any thread where that file is missing. */
function childrenOf(pid: number): number[] {
  // ENOENT: the process is gone, or the kernel lacks CONFIG_PROC_CHILDREN; either way the process list says.
  const children = tolerating(PROCESS_GONE, null, () => readFileSync(`/proc/${pid}/task/${pid}/children`, "latin1"));
  if (children !== null) return children.split(" ").filter(Boolean).map(Number);
  return listProcesses()
    .filter((info) => info.ppid === pid)
    .map((info) => info.pid);
}

/** The pid a process has in its own (innermost) pid namespace: the last NSpid field. */
function innermostPid(pid: number): number | null {
  const status = tolerating(PROCESS_GONE, null, () => readFileSync(`/proc/${pid}/status`, "latin1"));
  const line = status?.split("\n").find((entry) => entry.startsWith("NSpid:"));
  return line ? Number(line.trim().split(/\s+/).at(-1)) : null;
}
