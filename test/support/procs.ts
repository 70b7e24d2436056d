/**
 * The test kit's /proc scans (Linux), and the mark by which a test finds every workload it
 * started. Read straight from /proc, not through src/platform, so a test does not judge the
 * runtime's process code with that same code.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Every pid /proc lists right now. */
function allPids(): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

/** The state letter (R, S, Z…) and the parent from /proc/PID/stat, or null once the process is gone. */
function statOf(pid: number): { state: string; ppid: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: state!, ppid: Number(ppid) };
  } catch {
    return null;
  }
}

const stateOf = (pid: number) => statOf(pid)?.state ?? null;

const isLive = (pid: number) => {
  const state = stateOf(pid);
  return state !== null && state !== "Z";
};

/** True while every pid is a live (non-zombie) process. */
export function allAlive(pids: number[]): boolean {
  return pids.every(isLive);
}

/** Live (non-zombie) processes below `pid`, parents before children. */
export function descendants(pid: number): number[] {
  const live = allPids().flatMap((p) => {
    const stat = statOf(p);
    return stat !== null && stat.state !== "Z" ? [{ pid: p, ppid: stat.ppid }] : [];
  });
  const out: number[] = [];
  for (let level = [pid]; level.length > 0; ) {
    level = live.filter((p) => level.includes(p.ppid)).map((p) => p.pid);
    out.push(...level);
  }
  return out;
}

/** Pids of live (non-zombie) processes, other than this test process, whose command line contains `needle`. */
export function processesWith(needle: string): number[] {
  return allPids().filter((pid) => pid !== process.pid && cmdlineOf(pid).includes(needle) && isLive(pid));
}

/** The NUL-separated command line of a process ("" once it is gone). */
export function cmdlineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}

/** The environment of a live process as a map (empty once it is gone). */
export function environOf(pid: number): Record<string, string> {
  let text = "";
  try {
    text = readFileSync(`/proc/${pid}/environ`, "utf8");
  } catch {
    return {};
  }
  const entries = text.split("\0").filter(Boolean).map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)] as const);
  return Object.fromEntries(entries);
}

/** One line of /proc/<pid>/status, e.g. `SigIgn` (throws once the process is gone). */
export function statusField(pid: number, name: string): string | undefined {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${name}:`));
  return line?.slice(name.length + 1).trim();
}

/** Resident memory of a process in KiB (VmRSS), or null when it is gone. */
export function rssKiB(pid: number): number | null {
  try {
    const match = /^(\d+) kB$/.exec(statusField(pid, "VmRSS") ?? "");
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/**
 * Every workload a test starts carries this in its environment (spread it into the envelope's
 * env), so whatever a failed test left running can still be found and killed, and nothing else.
 */
export const MARK = { PHR_TEST_MARK: String(process.pid) };

/** Whether a process carries MARK in its environment (unreadable = no). */
export function isMarked(pid: number): boolean {
  return environOf(pid).PHR_TEST_MARK === MARK.PHR_TEST_MARK;
}

/** Pids of live processes carrying MARK. */
export function markedPids(): number[] {
  return allPids().filter((pid) => isMarked(pid) && isLive(pid));
}

/** SIGKILLs every live marked process; returns how many there were. */
export function killMarked(): number {
  const pids = markedPids();
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  return pids.length;
}
