/**
 * Signalling by pidfd (Linux): one process known by its identity, or the whole group a leader
 * leads, so that a pid number handed to someone else meanwhile is never hit. macOS has no
 * pidfds (unverified there): a process is checked, then signalled by kill(2); no group handle.
 */
import { closeSync } from "node:fs";
import { EINVAL, ESRCH, hasPidfd, pidfdOpen, pidfdSignal } from "./libc/processes.ts";
import { holdsPid, sendSignal, type ProcessIdentity } from "./process.ts";
import { signalNumber } from "./signals.ts";

/**
 * Signals one process known by its identity. On Linux through a pidfd whose process is
 * checked after opening, so a pid recycled since it was listed is never hit. Returns false
 * when that process is gone.
 */
export function signalProcess(member: ProcessIdentity, signal: NodeJS.Signals): boolean {
  if (!hasPidfd) {
    // macOS (unverified): no pidfd; the window between this check and kill(2) stays open.
    return holdsPid(member) && sendSignal(member.pid, signal);
  }
  const fd = pidfdOpen(member.pid);
  if (fd < 0) return false;
  try {
    if (!holdsPid(member)) return false;
    const result = pidfdSignal(fd, signalNumber(signal)!, false);
    if (result === -ESRCH) return false;
    if (result < 0) throw new Error(`pidfd_send_signal(${member.pid}, ${signal}) failed: errno ${-result}`);
    return true;
  } finally {
    closeSync(fd);
  }
}

/**
 * A pidfd of a group's leader: it names that group exactly, even after the leader was reaped
 * and its number handed out again. Null where pidfds or group signalling through them are
 * missing (macOS, Linux < 6.9). Only meaningful if opened while the leader held its pid.
 */
export class GroupHandle {
  private constructor(
    private readonly fd: number,
    readonly pgid: number,
  ) {}

  /** Opens the handle by pid: the caller proves that pid is the leader (an unreaped child, or checked after). */
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

  #closed = false;

  /** Signals every process of the group (0: only checks); false when none is left (or the handle is closed). */
  signal(signal: NodeJS.Signals | 0): boolean {
    // A closed descriptor's number may name another pidfd by now: never use it again.
    if (this.#closed) return false;
    const result = pidfdSignal(this.fd, signal === 0 ? 0 : signalNumber(signal)!, true);
    if (result === -ESRCH) return false;
    if (result < 0) throw new Error(`pidfd_send_signal(group ${this.pgid}, ${signal}) failed: errno ${-result}`);
    return true;
  }

  /** Whether any process of the group still exists (a zombie counts: it still pins the number). */
  exists(): boolean {
    return this.signal(0);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.fd);
  }
}
