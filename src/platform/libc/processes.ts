/** Processes by pidfd (Linux), and this process's own signal dispositions. */
import { isLinux } from "../os.ts";
import { errno, libcFunction, syscall } from "./symbols.ts";

/** Linux syscall numbers; pidfd_open and pidfd_send_signal use the generic table on x64 and arm64 alike. */
const SYS_PIDFD_SEND_SIGNAL = 424;
const SYS_PIDFD_OPEN = 434;
/** Signals every member of the process group the pidfd's process leads (Linux 6.9). */
const PIDFD_SIGNAL_PROCESS_GROUP = 4;

export const ESRCH = 3;
export const EINVAL = 22;

/** Whether this kernel offers pidfds at all (Linux 5.3); false elsewhere. */
export const hasPidfd = isLinux;

/**
 * A pidfd for `pid` (Linux 5.3), or -errno. It keeps naming that very process, and its group
 * by leader, even after the pid number is given to someone else.
 */
export function pidfdOpen(pid: number): number {
  const fd = syscall(SYS_PIDFD_OPEN, pid, 0);
  return fd < 0 ? -errno() : fd;
}

/**
 * Sends `signal` through a pidfd, to the process or (group) to the group it leads. Returns 0,
 * or -errno: -ESRCH when nothing is left to signal, -EINVAL when the kernel is older than the
 * group flag (Linux 6.9).
 */
export function pidfdSignal(fd: number, signal: number, group: boolean): number {
  const result = syscall(SYS_PIDFD_SEND_SIGNAL, fd, signal, 0, group ? PIDFD_SIGNAL_PROCESS_GROUP : 0);
  return result < 0 ? -errno() : 0;
}

const signalCall = libcFunction("signal", { args: ["i32", "i64"], returns: "i64" });
/** libc's real-time signal range, on Linux (glibc and musl both export it). */
const sigrtmin = libcFunction("__libc_current_sigrtmin", { args: [], returns: "i32" });
const sigrtmax = libcFunction("__libc_current_sigrtmax", { args: [], returns: "i32" });

/** SIG_IGN, and signal(2)'s SIG_ERR. */
const SIG_IGN = 1;
const SIG_ERR = -1;

/**
 * The real-time signals an application may use, SIGRTMIN..SIGRTMAX as libc numbers them
 * (the ones below SIGRTMIN are libc's own); none outside Linux.
 */
export function realtimeSignals(): number[] {
  if (!isLinux) return [];
  const numbers: number[] = [];
  for (let n = sigrtmin(); n <= sigrtmax(); n++) numbers.push(n);
  return numbers;
}

/** Sets signal `number` to SIG_IGN in this process (children start with the default again: Bun's spawn resets them). */
export function ignoreSignal(number: number): void {
  if (Number(signalCall(number, SIG_IGN)) === SIG_ERR) throw new Error(`signal(${number}, SIG_IGN) failed`);
}
