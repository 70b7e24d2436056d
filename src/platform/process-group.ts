/**
 * Process-group containment: ending a workload's process group and session when no cgroup
 * holds it (macOS; Linux without a delegated cgroup v2 hierarchy).
 *
 * Nothing here signals a process that is not provably the workload or its descendant. A
 * group or session id X is trusted only while the leader that created it (pid X with its
 * recorded start time) still holds pid X, running or as a zombie: the kernel never hands out
 * a pid still used as a process, group or session id, so while the leader holds X every
 * process of group or session X descends from it. Once the leader is gone, X may already
 * name a stranger's session (pid reuse), and what is left is left alone.
 */
import { closeSync } from "node:fs";
import { EINVAL, ESRCH, hasPidfd, pidfdOpen, pidfdSignal } from "./libc.ts";
import { holdsPid, listProcesses, readProcess, sendSignal, type ProcessIdentity, type ProcessInfo } from "./process.ts";
import { signalNumber } from "./signals.ts";

/**
 * Live members of the leader's group and session (the leader included while it runs), or
 * null when nothing proves that group and session are still its own.
 */
export function provenMembers(leader: ProcessIdentity, processes?: ProcessInfo[]): ProcessInfo[] | null {
  if (!holdsPid(leader)) return null;
  processes ??= listProcesses();
  // Still holding pid X after the sweep (or the caller's), the leader held it during the whole sweep.
  if (!holdsPid(leader)) return null;
  return processes.filter((info) => info.state !== "Z" && info.pid !== process.pid && (info.pgid === leader.pid || info.sid === leader.pid));
}

/**
 * Signals one process known by (pid, start time). On Linux through a pidfd whose process is
 * checked after opening, so a pid recycled since it was listed is never hit. Returns false
 * when that process is gone.
 */
export function signalKnown(member: { pid: number; startTicks: number }, signal: NodeJS.Signals): boolean {
  if (!hasPidfd) {
    // macOS (unverified): no pidfd; the window between this check and kill(2) stays open.
    const info = readProcess(member.pid);
    return info !== null && info.startTicks === member.startTicks && sendSignal(member.pid, signal);
  }
  const fd = pidfdOpen(member.pid);
  if (fd < 0) return false;
  try {
    const info = readProcess(member.pid);
    if (!info || info.startTicks !== member.startTicks) return false;
    const result = pidfdSignal(fd, signalNumber(signal)!, false);
    if (result === -ESRCH) return false;
    if (result < 0) throw new Error(`pidfd_send_signal(${member.pid}, ${signal}) failed: errno ${-result}`);
    return true;
  } finally {
    closeSync(fd);
  }
}

/**
 * Signals the process group the leader leads. On Linux 6.9+ through the leader's pidfd
 * (exactly that group, even once the number is reused); otherwise kill(-X) right after the
 * leader was seen holding X.
 */
function signalGroup(leader: ProcessIdentity, signal: NodeJS.Signals): void {
  if (hasPidfd) {
    const fd = pidfdOpen(leader.pid);
    if (fd < 0) return;
    try {
      if (!holdsPid(leader)) return;
      const result = pidfdSignal(fd, signalNumber(signal)!, true);
      if (result === 0 || result === -ESRCH) return;
      if (result !== -EINVAL) throw new Error(`pidfd_send_signal(${leader.pid}, ${signal}, group) failed: errno ${-result}`);
    } finally {
      closeSync(fd);
    }
  }
  if (holdsPid(leader)) sendSignal(-leader.pid, signal);
}

/** How an attempt to end a workload came out. */
export interface Ending {
  /** Every process proven to be the workload's is gone. */
  gone: boolean;
  /** Processes of group or session X left alone because nothing proves they are the workload's. */
  leftAlone: number;
}

/**
 * Signals the workload and waits until no proven member is left, up to `timeoutMs`. Members
 * are remembered by identity, so one proven while the leader held X stays proven after the
 * leader is gone; processes seen only after that are left alone and counted. SIGKILL is
 * re-sent on every poll so a fork racing the first kill is caught too.
 */
export async function signalAndWait(leader: ProcessIdentity, signal: NodeJS.Signals, timeoutMs: number): Promise<Ending> {
  const deadline = performance.now() + timeoutMs;
  const known = new Map<number, number>();
  const signalled = new Set<number>();
  let pause = 1;
  for (let first = true; ; first = false) {
    const members = provenMembers(leader);
    for (const member of members ?? []) known.set(member.pid, member.startTicks);
    const alive = [...known].filter(([pid, startTicks]) => isRunning(pid, startTicks));
    if (alive.length === 0) return { gone: true, leftAlone: members === null ? strays(leader.pid, known).length : 0 };
    if (!first && performance.now() >= deadline) return { gone: false, leftAlone: 0 };
    if (members !== null) signalGroup(leader, signal);
    for (const [pid, startTicks] of alive) {
      if (signal !== "SIGKILL" && signalled.has(pid)) continue;
      signalKnown({ pid, startTicks }, signal);
      if (signal !== "SIGKILL" && signal !== "SIGCONT") signalKnown({ pid, startTicks }, "SIGCONT");
      signalled.add(pid);
    }
    await Bun.sleep(pause);
    pause = Math.min(pause * 2, 20);
  }
}

function isRunning(pid: number, startTicks: number): boolean {
  const info = readProcess(pid);
  return info !== null && info.state !== "Z" && info.startTicks === startTicks;
}

/** Live processes of group or session `id` that were never proven the workload's. */
function strays(id: number, known: Map<number, number>): ProcessInfo[] {
  return listProcesses().filter((info) => info.state !== "Z" && (info.pgid === id || info.sid === id) && known.get(info.pid) !== info.startTicks);
}

/**
 * SIGTERM, a grace period, then SIGKILL until every proven member is gone. Throws if even
 * SIGKILL did not end them; says how many unprovable processes it left alone.
 */
export async function stopWorkload(leader: ProcessIdentity, graceMs: number, killTimeoutMs = 5000): Promise<Ending> {
  if (graceMs > 0) {
    const ending = await signalAndWait(leader, "SIGTERM", graceMs);
    if (ending.gone) return ending;
  }
  const ending = await signalAndWait(leader, "SIGKILL", killTimeoutMs);
  if (ending.gone) return ending;
  throw new Error(`workload ${leader.pid} survived SIGKILL for ${killTimeoutMs} ms`);
}

/**
 * The wrapper's own handle on its workload's process group: a pidfd taken while the leader
 * was its unreaped child, so it names that group exactly, even after the leader was reaped.
 * Null where pidfds or group signalling through them are missing (macOS, Linux < 6.9).
 */
export class GroupHandle {
  private constructor(
    private readonly fd: number,
    readonly pgid: number,
  ) {}

  /** Opens the handle for a child that has not been reaped yet. */
  static open(pid: number): GroupHandle | null {
    if (!hasPidfd) return null;
    const fd = pidfdOpen(pid);
    if (fd < 0) return null;
    // Probe the group flag once: signal 0 checks without delivering anything.
    if (pidfdSignal(fd, 0, true) === -EINVAL) {
      closeSync(fd);
      return null;
    }
    return new GroupHandle(fd, pid);
  }

  /** Signals every process of the group (0: only checks); false when none is left. */
  signal(signal: NodeJS.Signals | 0): boolean {
    const result = pidfdSignal(this.fd, signal === 0 ? 0 : signalNumber(signal)!, true);
    if (result === -ESRCH) return false;
    if (result < 0) throw new Error(`pidfd_send_signal(group ${this.pgid}, ${signal}) failed: errno ${-result}`);
    return true;
  }

  /**
   * Live members of the group. Counting by number is safe here: while this group still has
   * any member, zombies included, no other group can have its number.
   */
  members(): ProcessInfo[] {
    if (!this.signal(0)) return [];
    return listProcesses().filter((info) => info.pgid === this.pgid && info.state !== "Z" && info.pid !== process.pid);
  }

  close(): void {
    closeSync(this.fd);
  }
}
