/**
 * Process-group containment: ending a workload's process group and session when no cgroup
 * holds it (macOS; Linux without a delegated cgroup v2 hierarchy), also a git child's (lock.ts,
 * git.ts).
 *
 * Nothing here signals a process that is not provably the workload or its descendant. A
 * group or session id X is trusted only while something pins the number X to the leader's
 * group: the leader itself holding pid X (running or as a zombie), or — through a pidfd taken
 * while it did — any member of its group. The kernel never hands out a number still used as a
 * pid, group or session id, so while X is pinned every process of group or session X descends
 * from the leader. Without a pin, X may already name a stranger's session (pid reuse), and
 * what is left is left alone.
 */
import { GroupHandle, signalProcess } from "../platform/pidfd.ts";
import { holdsPid, identityOfProcess, isSameProcess, listProcesses, sendSignal, type ProcessIdentity, type ProcessInfo } from "../platform/process.ts";
import type { ExecutionScope } from "./scope.ts";

/**
 * An execution held by its leader's process group and session, as far as they are proven its
 * own. `handle`: the wrapper's pidfd of the leader, taken at spawn, which proves the group once
 * the leader was reaped, for as long as any member of it exists (null where there is none:
 * macOS, Linux < 6.9; leftovers of a reaped leader are then left alone). Left out, each ending
 * takes its own while the leader still holds its pid. `leftAlone` hears how many processes
 * could not be proven the execution's and were not touched. A leader of pid 0 never launched:
 * without a cgroup the gate runs nothing without its wrapper.
 */
export class GroupScope implements ExecutionScope {
  constructor(
    readonly leader: ProcessIdentity,
    private readonly options: { handle?: GroupHandle | null; leftAlone?: (count: number) => void } = {},
  ) {}

  async signal(signal: NodeJS.Signals, timeoutMs: number): Promise<boolean> {
    if (this.leader.pid === 0) return true;
    const ending = await signalAndWait(this.leader, signal, timeoutMs, this.options.handle);
    this.#report(ending);
    return ending.gone;
  }

  async end(graceMs: number): Promise<void> {
    if (this.leader.pid === 0) return;
    try {
      this.#report(await stopWorkload(this.leader, graceMs, this.options.handle));
    } finally {
      this.options.handle?.close();
    }
  }

  async killAll(): Promise<void> {
    await stopWorkload(this.leader, 0, this.options.handle);
  }

  /** A process group cannot be held still without signals its members (and their parents) would see. */
  async quiesce(): Promise<boolean> {
    return false;
  }

  /** Its leader no longer holds its pid: what is left of its group, if anything, can no longer be proven its own. */
  hasEnded(): boolean {
    return this.leader.pid === 0 || !holdsPid(this.leader);
  }

  /** Nothing is kept on the host for a process group. */
  remove(): void {}

  #report(ending: Ending): void {
    if (ending.leftAlone > 0) this.options.leftAlone?.(ending.leftAlone);
  }
}

/**
 * What proves group and session X are still the leader's. The leader holding pid X does; so
 * does, on Linux 6.9+, a pidfd of the leader taken while it held X, for as long as any process
 * of that very group exists (a zombie included): the group's members pin the number X, so no
 * stranger can have a group or session X meanwhile. Checked before and after each sweep.
 */
class Proof {
  private constructor(
    readonly leader: ProcessIdentity,
    private readonly group: GroupHandle | null,
    private readonly owned: boolean,
  ) {}

  /** A proof for a recorded leader; the pidfd is taken only if the leader still holds its pid. */
  static of(leader: ProcessIdentity, group?: GroupHandle | null): Proof {
    if (group !== undefined) return new Proof(leader, group, false);
    if (!holdsPid(leader)) return new Proof(leader, null, false);
    const opened = GroupHandle.open(leader.pid);
    // Opened by number: it names the leader only if the leader still holds the number now.
    if (opened && !holdsPid(leader)) {
      opened.close();
      return new Proof(leader, null, false);
    }
    return new Proof(leader, opened, true);
  }

  holds(): boolean {
    return holdsPid(this.leader) || (this.group?.exists() ?? false);
  }

  /** Live members of group and session X, or null when nothing proves them the leader's. */
  members(processes?: ProcessInfo[]): ProcessInfo[] | null {
    if (!this.holds()) return null;
    const all = processes ?? listProcesses();
    if (!this.holds()) return null;
    const id = this.leader.pid;
    return all.filter((info) => info.state !== "Z" && info.pid !== process.pid && (info.pgid === id || info.sid === id));
  }

  /** Signals group X: through the pidfd when there is one, else kill(-X) right after a check. */
  signalGroup(signal: NodeJS.Signals): void {
    if (this.group) {
      this.group.signal(signal);
      return;
    }
    if (holdsPid(this.leader)) sendSignal(-this.leader.pid, signal);
  }

  close(): void {
    if (this.owned) this.group?.close();
  }
}

/**
 * Live members of the leader's group and session (the leader included while it runs), or
 * null when nothing proves that group and session are still its own.
 */
export function provenMembers(leader: ProcessIdentity, processes?: ProcessInfo[]): ProcessInfo[] | null {
  const proof = Proof.of(leader);
  try {
    return proof.members(processes);
  } finally {
    proof.close();
  }
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
 * are remembered by identity, so one proven while the proof held stays proven after; what
 * shows up only after the proof is gone is left alone and counted. SIGKILL is re-sent on every
 * poll so a fork racing the first kill is caught too. `group`: the wrapper's own handle.
 */
async function signalAndWait(leader: ProcessIdentity, signal: NodeJS.Signals, timeoutMs: number, group?: GroupHandle | null): Promise<Ending> {
  const proof = Proof.of(leader, group);
  try {
    const deadline = performance.now() + timeoutMs;
    const known = new Map<number, number>();
    const signalled = new Set<number>();
    let pause = 1;
    for (let first = true; ; first = false) {
      const members = proof.members();
      for (const member of members ?? []) known.set(member.pid, member.startTicks);
      const alive = [...known].map(([pid, startTicks]) => identityOfProcess({ pid, startTicks })).filter(isSameProcess);
      if (alive.length === 0) return { gone: true, leftAlone: members === null ? strays(leader.pid, known).length : 0 };
      if (!first && performance.now() >= deadline) return { gone: false, leftAlone: 0 };
      if (members !== null) proof.signalGroup(signal);
      for (const member of alive) {
        if (signal !== "SIGKILL" && signalled.has(member.pid)) continue;
        signalProcess(member, signal);
        if (signal !== "SIGKILL" && signal !== "SIGCONT") signalProcess(member, "SIGCONT");
        signalled.add(member.pid);
      }
      await Bun.sleep(pause);
      pause = Math.min(pause * 2, 20);
    }
  } finally {
    proof.close();
  }
}

/** Live processes of group or session `id` that were never proven the workload's. */
function strays(id: number, known: Map<number, number>): ProcessInfo[] {
  return listProcesses().filter((info) => info.state !== "Z" && (info.pgid === id || info.sid === id) && known.get(info.pid) !== info.startTicks);
}

/**
 * SIGTERM, a grace period, then SIGKILL until every proven member is gone. Throws if even
 * SIGKILL did not end them; says how many unprovable processes it left alone.
 */
export async function stopWorkload(leader: ProcessIdentity, graceMs: number, group?: GroupHandle | null, killTimeoutMs = 5000): Promise<Ending> {
  if (graceMs > 0) {
    const ending = await signalAndWait(leader, "SIGTERM", graceMs, group);
    if (ending.gone) return ending;
  }
  const ending = await signalAndWait(leader, "SIGKILL", killTimeoutMs, group);
  if (ending.gone) return ending;
  throw new Error(`workload ${leader.pid} survived SIGKILL for ${killTimeoutMs} ms`);
}
