/**
 * What a running process looks like to `ps`: its command line and its memory. Linux reads
 * /proc; macOS (unverified here) asks ps(1). Never the environment: it may hold secrets.
 */
import { readFileSync } from "node:fs";
import { readCounter } from "./cgroup.ts";
import { isLinux } from "./os.ts";

/** A process's command line: its argv where the kernel tells it exactly, else ps(1)'s text. */
interface CommandLine {
  /** The exact argv (Linux), or null. */
  argv: string[] | null;
  /** The command line as text (macOS: ps's `args`, words joined by spaces). */
  text: string;
}

/** The command line of `pid`, or null when it is gone, a zombie, or unreadable. */
export function commandLine(pid: number): CommandLine | null {
  if (!isLinux) {
    const text = psField(pid, "args");
    return text === null || text === "" ? null : { argv: null, text };
  }
  let raw: string;
  try {
    raw = readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return null;
  }
  if (raw === "") return null;
  const argv = (raw.endsWith("\0") ? raw.slice(0, -1) : raw).split("\0");
  return { argv, text: argv.join(" ") };
}

/** The resident memory of `pids` together, in bytes; null when none could be read. */
export function residentBytes(pids: readonly number[]): number | null {
  let total = 0;
  let read = 0;
  for (const pid of pids) {
    const kib = isLinux ? vmRssKib(pid) : Number(psField(pid, "rss") ?? Number.NaN);
    if (!Number.isFinite(kib)) continue;
    total += kib * 1024;
    read++;
  }
  return read === 0 ? null : total;
}

/** VmRSS of /proc/<pid>/status in KiB (NaN when unreadable; absent for kernel threads). */
function vmRssKib(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "latin1"));
    return match ? Number(match[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** A cgroup v2 directory's memory.current (every process in it, page cache included), or null. */
export function cgroupMemoryBytes(cgroupDir: string): number | null {
  return readCounter(cgroupDir, "memory.current");
}

/** One `ps -o FIELD=` value of a process (macOS), or null. */
function psField(pid: number, field: string): string | null {
  const result = Bun.spawnSync(["ps", "-ww", "-o", `${field}=`, "-p", String(pid)], { stdin: "ignore", stdout: "pipe", stderr: "ignore", env: { PATH: "/bin:/usr/bin" } });
  if (result.exitCode !== 0) return null;
  return result.stdout.toString().trim();
}
