/**
 * What a running process looks like to `ps`: its command line and its memory. Linux reads
 * /proc; macOS (unverified here) asks ps(1). Never the environment: it may hold secrets.
 */
import { readFileSync } from "node:fs";
import { readCounter } from "./cgroup.ts";
import { isLinux } from "./os.ts";
import { PROCESS_UNREADABLE, tolerating } from "./errno.ts";

/** A process's command line: its argv where the kernel tells it exactly, else ps(1)'s text. */
interface CommandLine {
  /** The exact argv (Linux), or null. */
  argv: string[] | null;
  /** The command line as text (macOS: ps's `args`, words joined by spaces). */
  text: string;
}

/** The command line of `pid`, or null when it is gone, a zombie, or another user's we may not read. */
export function commandLine(pid: number): CommandLine | null {
  if (!isLinux) {
    const text = psField(pid, "args");
    return text === null || text === "" ? null : { argv: null, text };
  }
  const raw = tolerating(PROCESS_UNREADABLE, "", () => readFileSync(`/proc/${pid}/cmdline`, "utf8"));
  if (raw === "") return null;
  const argv = (raw.endsWith("\0") ? raw.slice(0, -1) : raw).split("\0");
  return { argv, text: argv.join(" ") };
}

/**
 * The memory of `pids` together, in bytes, and what it is: "pss", the proportional set size
 * (a page shared by n processes counts 1/n in each, so the sum is what they use together), or
 * "rss", resident sizes added up: an upper bound that counts a shared page once per process
 * (2 000 `sleep`s "use" 2.8 GiB). Linux reads /proc/<pid>/smaps_rollup (4.14+), falling back to
 * VmRSS where it cannot; macOS has only ps(1)'s rss. null when nothing could be read.
 */
export function processMemory(pids: readonly number[]): { bytes: number; source: "pss" | "rss" } | null {
  let total = 0;
  let read = 0;
  let upperBound = !isLinux;
  for (const pid of pids) {
    let kib = isLinux ? procKib(pid, "smaps_rollup", "Pss") : Number.NaN;
    if (!Number.isFinite(kib)) {
      kib = isLinux ? procKib(pid, "status", "VmRSS") : Number(psField(pid, "rss") ?? Number.NaN);
      if (Number.isFinite(kib)) upperBound = true;
    }
    if (!Number.isFinite(kib)) continue;
    total += kib * 1024;
    read++;
  }
  return read === 0 ? null : { bytes: total, source: upperBound ? "rss" : "pss" };
}

/** The `FIELD:  N kB` line of /proc/<pid>/FILE in KiB (NaN when unreadable or absent, e.g. a kernel thread). */
function procKib(pid: number, file: "smaps_rollup" | "status", field: string): number {
  const text = tolerating(PROCESS_UNREADABLE, "", () => readFileSync(`/proc/${pid}/${file}`, "latin1"));
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(text);
  return match ? Number(match[1]) : Number.NaN;
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
