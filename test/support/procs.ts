/**
 * The test kit's /proc scans (Linux). Read straight from /proc, not through src/platform, so a
 * test does not judge the runtime's process code with that same code.
 */
import { readdirSync, readFileSync } from "node:fs";

/** The state letter of /proc/PID/stat (R, S, Z…), or null once the process is gone. */
function stateOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.charAt(stat.lastIndexOf(")") + 2);
  } catch {
    return null;
  }
}

/** Pids of live (non-zombie) processes, other than this test process, whose command line contains `needle`. */
export function processesWith(needle: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const pid = Number(name);
    if (!cmdlineOf(pid).includes(needle)) continue;
    const state = stateOf(pid);
    if (state !== null && state !== "Z") found.push(pid);
  }
  return found;
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
