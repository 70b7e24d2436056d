/**
 * Ending a workload's whole process group and session, and knowing when it is gone.
 * Shared by the wrapper's completion cleanup, `signal`, pause, destroy and reconcile.
 */
import { bootId, listProcesses, sendSignal, type ProcessInfo } from "./process.ts";

/** What identifies a workload: its leader (pid = pgid = sid) and when it started. */
export interface WorkloadIdentity {
  pid: number;
  pgid: number;
  startTicks: number;
  bootId: string;
}

/**
 * Live processes that belong to the workload: same process group or same session.
 * The kernel never hands out a pid still used as a group or session id, so a member is ours
 * unless the leader pid now names a different process (then the group is long gone).
 */
export function workloadMembers(id: WorkloadIdentity, processes: ProcessInfo[] = listProcesses()): ProcessInfo[] {
  if (id.pid <= 0 || id.bootId !== bootId()) return [];
  const leader = processes.find((info) => info.pid === id.pid);
  if (leader && leader.startTicks !== id.startTicks) return [];
  return processes.filter((info) => info.state !== "Z" && info.pid !== process.pid && (info.pgid === id.pgid || info.sid === id.pgid));
}

/** Sends `signal` to the group and to every session member outside it (a shell's jobs). */
export function signalWorkload(id: WorkloadIdentity, signal: NodeJS.Signals, members = workloadMembers(id)): number {
  if (members.length === 0) return 0;
  sendSignal(-id.pgid, signal);
  for (const member of members) {
    if (member.pgid !== id.pgid) sendSignal(member.pid, signal);
  }
  return members.length;
}

/**
 * Signals the workload and waits until no member is left, up to `timeoutMs`.
 * SIGKILL is re-sent on every poll so a fork racing the first kill is caught too.
 * Returns true when the workload is gone.
 */
export async function signalAndWait(id: WorkloadIdentity, signal: NodeJS.Signals, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  let members = workloadMembers(id);
  if (members.length === 0) return true;
  signalWorkload(id, signal, members);
  if (signal !== "SIGKILL" && signal !== "SIGCONT") signalWorkload(id, "SIGCONT", members);
  const signalled = new Set(members.map((member) => member.pid));
  let pause = 1;
  for (;;) {
    await Bun.sleep(pause);
    pause = Math.min(pause * 2, 20);
    members = workloadMembers(id);
    if (members.length === 0) return true;
    if (performance.now() >= deadline) return false;
    const fresh = signal === "SIGKILL" ? members : members.filter((member) => !signalled.has(member.pid));
    if (fresh.length > 0) {
      signalWorkload(id, signal, fresh);
      for (const member of fresh) signalled.add(member.pid);
    }
  }
}

/** SIGTERM, a grace period, then SIGKILL until gone. Throws if even SIGKILL did not end it. */
export async function stopWorkload(id: WorkloadIdentity, graceMs: number, killTimeoutMs = 5000): Promise<void> {
  if (graceMs > 0 && (await signalAndWait(id, "SIGTERM", graceMs))) return;
  if (await signalAndWait(id, "SIGKILL", killTimeoutMs)) return;
  throw new Error(`workload ${id.pid} survived SIGKILL for ${killTimeoutMs} ms`);
}
