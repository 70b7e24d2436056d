/** Running protocol operations through `--remote`, the way a daemon configured with it does. */
import { readdirSync, readFileSync } from "node:fs";
import { op, type OpResult } from "../support/operation.ts";
import type { SshLab } from "../../kit/sshd.ts";

/** One lifecycle operation through `--remote` (the lab's URL and ssh configuration). */
export async function remoteOp(lab: SshLab, name: string, workspaceId: string | null, body: Record<string, unknown>, prefix = lab.prefix): Promise<OpResult> {
  return await op(name, workspaceId, body, {}, prefix);
}

/** Resident memory of a process in KiB (VmRSS), or null when it is gone. */
export function rssKiB(pid: number): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** Every workload a test file starts carries this in its env, so leftovers can be found and killed. */
export const MARK = { PHR_REMOTE_TEST: String(process.pid) };

/** Pids of live processes carrying MARK in their environment. */
export function markedPids(): number[] {
  const wanted = `PHR_REMOTE_TEST=${process.pid}`;
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, "latin1").split("\0").includes(wanted)) pids.push(Number(name));
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids;
}

/** SIGKILLs whatever a test left running (by the mark); returns how many there were. */
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
