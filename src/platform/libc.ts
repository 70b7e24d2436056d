/** The few libc calls Node's API lacks, through bun:ffi (works inside compiled binaries). */
import { dlopen, FFIType, ptr, read } from "bun:ffi";

const isLinux = process.platform === "linux";
const LIBC = process.platform === "darwin" ? "libc.dylib" : "libc.so.6";
/** RLIMIT_CORE: 4 on Linux, 4 on macOS too. */
const RLIMIT_CORE = 4;

let lib: ReturnType<typeof load> | undefined;

function load() {
  return dlopen(LIBC, {
    dup2: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    setrlimit: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
    tcflow: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    pipe: { args: [FFIType.ptr], returns: FFIType.i32 },
  }).symbols;
}

function libc() {
  lib ??= load();
  return lib;
}

let linuxLib: ReturnType<typeof loadLinux> | undefined;

/** Calls only Linux has (glibc and musl both export them). */
function loadLinux() {
  return dlopen(LIBC, {
    syscall: { args: [FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64], returns: FFIType.i64 },
    pipe2: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    __errno_location: { args: [], returns: FFIType.ptr },
  }).symbols;
}

function linux() {
  if (!isLinux) throw new Error("this call exists only on Linux");
  linuxLib ??= loadLinux();
  return linuxLib;
}

/** dup2(2); throws with the call named on failure. */
export function dup2(from: number, to: number): void {
  if (libc().dup2(from, to) < 0) throw new Error(`dup2(${from}, ${to}) failed`);
}

/** Sets RLIMIT_CORE to 0 so re-raising a core-dumping signal does not write a ~100 MiB core. */
export function disableCoreDumps(): void {
  const limits = new BigUint64Array([0n, 0n]);
  libc().setrlimit(RLIMIT_CORE, ptr(limits));
}

/** tcflow(3) actions differ between Linux and the BSDs. */
const TCOOFF = process.platform === "darwin" ? 1 : 0;
const TCOON = process.platform === "darwin" ? 2 : 1;

/** Suspends (false) or restarts (true) output of the terminal `fd` refers to. */
export function setTerminalOutput(fd: number, running: boolean): void {
  if (libc().tcflow(fd, running ? TCOON : TCOOFF) < 0) throw new Error(`tcflow(${fd}, ${running ? "TCOON" : "TCOOFF"}) failed`);
}

const O_CLOEXEC = 0o2000000;

/**
 * A pipe as [read end, write end]. On Linux both ends are close-on-exec (pipe2); macOS has no
 * pipe2, and there Bun's spawn closes every descriptor it was not told to pass (unverified).
 */
export function makePipe(): [number, number] {
  const fds = new Int32Array(2);
  const result = isLinux ? linux().pipe2(ptr(fds), O_CLOEXEC) : libc().pipe(ptr(fds));
  if (result < 0) throw new Error(`pipe failed (errno ${isLinux ? errno() : "?"})`);
  return [fds[0]!, fds[1]!];
}

/** errno of the last failed call on this thread (Linux). */
function errno(): number {
  return read.i32(linux().__errno_location()!, 0);
}

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
  const fd = Number(linux().syscall(SYS_PIDFD_OPEN, pid, 0, 0, 0));
  return fd < 0 ? -errno() : fd;
}

/**
 * Sends `signal` through a pidfd, to the process or (group) to the group it leads. Returns 0,
 * or -errno: -ESRCH when nothing is left to signal, -EINVAL when the kernel is older than the
 * group flag (Linux 6.9).
 */
export function pidfdSignal(fd: number, signal: number, group: boolean): number {
  const result = Number(linux().syscall(SYS_PIDFD_SEND_SIGNAL, fd, signal, 0, group ? PIDFD_SIGNAL_PROCESS_GROUP : 0));
  return result < 0 ? -errno() : 0;
}
