/** The few libc calls Node's API lacks, through bun:ffi (works inside compiled binaries). */
import { writeSync } from "node:fs";
import type { Pointer } from "bun:ffi";
import { lazyOs } from "./lazy.ts";
import { isLinux } from "./os.ts";

type Ffi = typeof import("bun:ffi");
let ffiModule: Ffi | undefined;

/** bun:ffi, loaded by the first call that needs libc (~0.2 ms at start-up; inspect makes none). */
function ffi(): Ffi {
  ffiModule ??= require("bun:ffi") as Ffi;
  return ffiModule;
}

// musl builds too: musl's loader answers any "libc.*" name with itself (ldso/dynlink.c, load_library).
const LIBC = process.platform === "darwin" ? "libc.dylib" : "libc.so.6";
/** RLIMIT_CORE: 4 on Linux, 4 on macOS too. */
const RLIMIT_CORE = 4;

let lib: ReturnType<typeof load> | undefined;

function load() {
  return ffi().dlopen(LIBC, {
    dup2: { args: ["i32", "i32"], returns: "i32" },
    setrlimit: { args: ["i32", "ptr"], returns: "i32" },
    tcflow: { args: ["i32", "i32"], returns: "i32" },
    pipe: { args: ["ptr"], returns: "i32" },
    flock: { args: ["i32", "i32"], returns: "i32" },
    _exit: { args: ["i32"], returns: "void" },
  }).symbols;
}

function libc() {
  lib ??= load();
  return lib;
}

let linuxLib: ReturnType<typeof loadLinux> | undefined;

/** Calls only Linux has (glibc and musl both export them): pipe2, and `syscall` for pidfds. */
function loadLinux() {
  return ffi().dlopen(LIBC, {
    syscall: { args: ["i64", "i64", "i64", "i64", "i64"], returns: "i64" },
    pipe2: { args: ["ptr", "i32"], returns: "i32" },
    [ERRNO_SYMBOL]: { args: [], returns: "ptr" },
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

/** _exit(2): ends this process at once, running no exit handler (Bun's closes every open database). */
export function exitImmediately(code: number): never {
  libc()._exit(code);
  throw new Error("_exit returned");
}

/** Sets RLIMIT_CORE to 0 so re-raising a core-dumping signal does not write a ~100 MiB core. */
export function disableCoreDumps(): void {
  const limits = new BigUint64Array([0n, 0n]);
  if (libc().setrlimit(RLIMIT_CORE, ffi().ptr(limits)) < 0) throw new Error(`setrlimit(RLIMIT_CORE, 0) failed (errno ${isLinux ? errno() : "?"})`);
}

/** tcflow(3) actions differ between Linux and the BSDs. */
const TCOOFF = process.platform === "darwin" ? 1 : 0;
const TCOON = process.platform === "darwin" ? 2 : 1;

/** Suspends (false) or restarts (true) output of the terminal `fd` refers to. */
export function setTerminalOutput(fd: number, running: boolean): void {
  if (libc().tcflow(fd, running ? TCOON : TCOOFF) < 0) throw new Error(`tcflow(${fd}, ${running ? "TCOON" : "TCOOFF"}) failed`);
}

/** glibc and musl name the errno accessor `__errno_location`, Darwin `__error`. */
const ERRNO_SYMBOL = process.platform === "darwin" ? "__error" : "__errno_location";

/**
 * Calls that open paths relative to a directory descriptor, for confinement (directory.ts).
 * Loaded apart from the other groups: each bound symbol costs start-up, and `syscall` is
 * Linux-only. `openat` is variadic; it is declared without the mode, which only O_CREAT reads.
 */
let beneathLib: ReturnType<typeof loadBeneath> | undefined;

function loadBeneath() {
  return ffi().dlopen(LIBC, {
    openat: { args: ["i32", "ptr", "i32"], returns: "i32" },
    fchdir: { args: ["i32"], returns: "i32" },
    [ERRNO_SYMBOL]: { args: [], returns: "ptr" },
  }).symbols;
}

/** Linux only: `syscall` (for openat2, which glibc does not wrap). */
let syscallLib: ReturnType<typeof loadSyscall> | undefined;

function loadSyscall() {
  return ffi().dlopen(LIBC, {
    syscall: { args: ["i64", "i32", "ptr", "ptr", "u64"], returns: "i64" },
    [ERRNO_SYMBOL]: { args: [], returns: "ptr" },
  }).symbols;
}

function beneath() {
  beneathLib ??= loadBeneath();
  return beneathLib;
}

/** errno of the calling thread, read right after a failed call (nothing runs in between). */
function errnoOf(symbols: Record<string, unknown>): number {
  const location = (symbols[ERRNO_SYMBOL] as () => Pointer | null)();
  return location === null ? 0 : ffi().read.i32(location, 0);
}

/** A failed libc call, with the errno name Node uses (`code`), so callers test `error.code`. */
export class SystemCallError extends Error {
  constructor(
    call: string,
    readonly code: string,
  ) {
    super(`${call} failed: ${code}`);
  }
}

/** The error of a call that just failed (`errno` read first, before anything else runs), named (ELOOP, ENOENT…) for this platform. */
function failed(errno: number, call: string): SystemCallError {
  for (const [name, value] of Object.entries(lazyOs().constants.errno)) if (value === errno) return new SystemCallError(call, name);
  return new SystemCallError(call, `errno ${errno}`);
}

function cString(text: string): Buffer {
  return Buffer.from(`${text}\0`);
}

/** openat(2): `name` opened relative to the directory `dirFd`; returns the new descriptor. */
export function openat(dirFd: number, name: string, flags: number): number {
  const lib = beneath();
  const fd = lib.openat(dirFd, cString(name), flags);
  if (fd < 0) throw failed(errnoOf(lib), `openat(${JSON.stringify(name)})`);
  return fd;
}

/** struct open_how's `resolve` bits (linux/openat2.h). */
const RESOLVE_NO_XDEV = 0x01n;
const RESOLVE_NO_SYMLINKS = 0x04n;
const RESOLVE_BENEATH = 0x08n;
/** openat2 has the same number on every Linux architecture (it is newer than the unified table). */
const SYS_OPENAT2 = 437;

/**
 * openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: the kernel refuses any `..` that
 * leaves `dirFd` and any symlink on the way (ELOOP), in one atomic walk. With `sameMount`, also
 * RESOLVE_NO_XDEV: crossing into any mount, a bind mount of the same filesystem included, fails
 * with EXDEV. Linux 5.6+.
 */
export function openat2Beneath(dirFd: number, path: string, flags: number, sameMount = false): number {
  const lib = (syscallLib ??= loadSyscall());
  const resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | (sameMount ? RESOLVE_NO_XDEV : 0n);
  const how = new BigUint64Array([BigInt(flags), 0n, resolve]);
  const fd = Number(lib.syscall(SYS_OPENAT2, dirFd, cString(path), ffi().ptr(how), how.byteLength));
  if (fd < 0) throw failed(errnoOf(lib), `openat2(${JSON.stringify(path)}, RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS${sameMount ? "|RESOLVE_NO_XDEV" : ""})`);
  return fd;
}

/** fchdir(2): makes the directory open at `fd` this process's working directory. */
export function fchdir(fd: number): void {
  const lib = beneath();
  if (lib.fchdir(fd) < 0) throw failed(errnoOf(lib), `fchdir(${fd})`);
}

/** Calls for copying file data extent by extent (file-data.ts). */
let copyLib: ReturnType<typeof loadCopy> | undefined;

function loadCopy() {
  return ffi().dlopen(LIBC, {
    lseek: { args: ["i32", "i64", "i32"], returns: "i64" },
    [ERRNO_SYMBOL]: { args: [], returns: "ptr" },
  }).symbols;
}

function copyCalls() {
  copyLib ??= loadCopy();
  return copyLib;
}

/** Linux only: in-kernel copies (glibc 2.27+). `ioctl` is variadic; its one argument is an int here. */
let linuxCopyLib: ReturnType<typeof loadLinuxCopy> | undefined;

function loadLinuxCopy() {
  return ffi().dlopen(LIBC, {
    copy_file_range: { args: ["i32", "ptr", "i32", "ptr", "u64", "u32"], returns: "i64" },
    ioctl: { args: ["i32", "u64", "i32"], returns: "i32" },
    [ERRNO_SYMBOL]: { args: [], returns: "ptr" },
  }).symbols;
}

function linuxCopy() {
  linuxCopyLib ??= loadLinuxCopy();
  return linuxCopyLib;
}

/** lseek(2) whence values for sparse files: Linux and the BSDs swapped them. */
export const SEEK_DATA = process.platform === "darwin" ? 4 : 3;
export const SEEK_HOLE = process.platform === "darwin" ? 3 : 4;

/** lseek(2); returns the resulting offset. */
export function lseek(fd: number, offset: number, whence: number): number {
  const lib = copyCalls();
  const result = Number(lib.lseek(fd, offset, whence));
  if (result < 0) throw failed(errnoOf(lib), `lseek(${fd}, ${offset}, ${whence})`);
  return result;
}

/**
 * copy_file_range(2) of `length` bytes at `offset` in both files (the descriptors' own
 * offsets are not used). Returns the bytes copied: fewer than asked is normal, 0 is EOF.
 */
export function copyFileRange(from: number, to: number, offset: number, length: number): number {
  const lib = linuxCopy();
  const offsets = new BigInt64Array([BigInt(offset), BigInt(offset)]);
  const copied = Number(lib.copy_file_range(from, ffi().ptr(offsets, 0), to, ffi().ptr(offsets, 8), length, 0));
  if (copied < 0) throw failed(errnoOf(lib), "copy_file_range");
  return copied;
}

/** FICLONE (linux/fs.h: _IOW(0x94, 9, int)): makes `to` share all of `from`'s blocks. */
const FICLONE = 0x40049409;

/** Reflinks `from` into `to` where the filesystem can (btrfs, XFS…); throws otherwise. */
export function cloneFile(from: number, to: number): void {
  const lib = linuxCopy();
  if (lib.ioctl(to, FICLONE, from) < 0) throw failed(errnoOf(lib), "ioctl(FICLONE)");
}

/** flock(2) operations: the same numbers on Linux and macOS. */
const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;

/** Takes an exclusive flock(2) on `fd` without waiting; false when another holder has it. */
export function tryLockExclusive(fd: number): boolean {
  return libc().flock(fd, LOCK_EX | LOCK_NB) === 0;
}

/** Releases a flock(2) taken on `fd` (closing the descriptor releases it too). */
export function unlock(fd: number): void {
  libc().flock(fd, LOCK_UN);
}

const O_CLOEXEC = 0o2000000;

/**
 * A pipe as [read end, write end]. On Linux both ends are close-on-exec (pipe2); macOS has no
 * pipe2, and there Bun's spawn closes every descriptor it was not told to pass (unverified).
 */
export function makePipe(): [number, number] {
  const fds = new Int32Array(2);
  const result = isLinux ? linux().pipe2(ffi().ptr(fds), O_CLOEXEC) : libc().pipe(ffi().ptr(fds));
  if (result < 0) throw new Error(`pipe failed (errno ${isLinux ? errno() : "?"})`);
  return [fds[0]!, fds[1]!];
}

/** errno of the last failed call on this thread (Linux). */
function errno(): number {
  return errnoOf(linux());
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

let signalLib: ReturnType<typeof loadSignalCalls> | undefined;

/** signal(2) and, on Linux, libc's real-time signal range (glibc and musl both export it). */
function loadSignalCalls() {
  return ffi().dlopen(LIBC, {
    signal: { args: ["i32", "i64"], returns: ffi().FFIType.i64_fast },
    ...(isLinux
      ? {
          __libc_current_sigrtmin: { args: [], returns: "i32" },
          __libc_current_sigrtmax: { args: [], returns: "i32" },
        }
      : {}),
  }).symbols as {
    signal: (signal: number, handler: number) => number;
    __libc_current_sigrtmin?: () => number;
    __libc_current_sigrtmax?: () => number;
  };
}

function signalCalls() {
  signalLib ??= loadSignalCalls();
  return signalLib;
}

/** SIG_IGN, and signal(2)'s SIG_ERR. */
const SIG_IGN = 1;
const SIG_ERR = -1;

/**
 * The real-time signals an application may use, SIGRTMIN..SIGRTMAX as libc numbers them
 * (the ones below SIGRTMIN are libc's own); none outside Linux.
 */
export function realtimeSignals(): number[] {
  const calls = signalCalls();
  if (!calls.__libc_current_sigrtmin || !calls.__libc_current_sigrtmax) return [];
  const numbers: number[] = [];
  for (let n = calls.__libc_current_sigrtmin(); n <= calls.__libc_current_sigrtmax(); n++) numbers.push(n);
  return numbers;
}

/** Sets signal `number` to SIG_IGN in this process (children start with the default again: Bun's spawn resets them). */
export function ignoreSignal(number: number): void {
  if (signalCalls().signal(number, SIG_IGN) === SIG_ERR) throw new Error(`signal(${number}, SIG_IGN) failed`);
}

/**
 * Descriptors for the sandbox's launch (src/exec/prepare.ts): duplicates of the daemon's, and
 * the in-memory file bwrap copies the sandbox init from. `fcntl` is variadic; its one argument
 * is an int here. `memfd_create` is Linux only (glibc 2.27, musl 1.1.20).
 */
let dupLib: ReturnType<typeof loadDup> | undefined;

function loadDup() {
  return ffi().dlopen(LIBC, {
    fcntl: { args: ["i32", "i32", "i32"], returns: "i32" },
    ...(isLinux ? { memfd_create: { args: ["ptr", "u32"], returns: "i32" } } : {}),
    [ERRNO_SYMBOL]: { args: [], returns: "ptr" },
  }).symbols as { fcntl: (fd: number, cmd: number, arg: number) => number; memfd_create?: (name: Buffer, flags: number) => number } & Record<string, unknown>;
}

const MFD_CLOEXEC = 1;

/** A close-on-exec in-memory file holding `data`, its offset at 0 (Linux). */
export function memoryFile(name: string, data: string): number {
  const lib = (dupLib ??= loadDup());
  const fd = lib.memfd_create!(cString(name), MFD_CLOEXEC);
  if (fd < 0) throw failed(errnoOf(lib), "memfd_create");
  const bytes = Buffer.from(data);
  // Positional writes leave the offset at 0, where bwrap starts reading.
  for (let offset = 0; offset < bytes.length; ) offset += writeSync(fd, bytes, offset, bytes.length - offset, offset);
  return fd;
}

const F_DUPFD_CLOEXEC = process.platform === "darwin" ? 67 : 1030;

/**
 * A close-on-exec duplicate of `fd` numbered 10 or above: a spawn that also replaces fds 0–2
 * can then hand the original 0–2 on at other numbers without dup2 clobbering them first.
 */
export function duplicateDescriptor(fd: number): number {
  const lib = (dupLib ??= loadDup());
  const copy = lib.fcntl(fd, F_DUPFD_CLOEXEC, 10);
  if (copy < 0) throw failed(errnoOf(lib), `fcntl(${fd}, F_DUPFD_CLOEXEC)`);
  return copy;
}

/**
 * A wait on a 32-bit word of a shared file mapping (Bun.mmap), for a lock whose waiters sleep
 * until it is released (src/store/writer-lock.ts). Linux: futex(2) without the private flag, so
 * every process mapping the same file waits on the same word, woken in FIFO order. Elsewhere
 * (macOS, unverified) no futex: the wait is a short sleep, and the caller polls.
 */
const SYS_FUTEX = process.arch === "arm64" ? 98 : 202;
const FUTEX_WAIT = 0;
const FUTEX_WAKE = 1;

/** The address of a word of a mapping, for waitWhileEqual and wakeUp. */
export function addressOf(mapping: Uint8Array, byteOffset: number): number {
  return Number(ffi().ptr(mapping, byteOffset));
}

/**
 * Sleeps while the word at `address` still holds `expected`, at most `ms`: until a wakeUp() on
 * it, the time, or a signal. Returns at once when it holds something else. The caller
 * re-checks whatever the word stands for in every case.
 */
export function waitWhileEqual(address: number, expected: number, ms: number): void {
  if (!isLinux) {
    Bun.sleepSync(Math.min(ms, 2));
    return;
  }
  const whole = Math.max(1, Math.floor(ms));
  const timeout = new BigInt64Array([BigInt(Math.floor(whole / 1000)), BigInt((whole % 1000) * 1_000_000)]);
  linux().syscall(SYS_FUTEX, address, FUTEX_WAIT, expected, Number(ffi().ptr(timeout)));
}

/** Wakes up to `count` processes sleeping in waitWhileEqual on the word at `address` (the longest-waiting first). */
export function wakeUp(address: number, count: number): void {
  if (isLinux) linux().syscall(SYS_FUTEX, address, FUTEX_WAKE, count, 0);
}
