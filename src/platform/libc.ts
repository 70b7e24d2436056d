/** The few libc calls Node's API lacks, through bun:ffi (works inside compiled binaries). */
import { dlopen, FFIType, ptr } from "bun:ffi";

const LIBC = process.platform === "darwin" ? "libc.dylib" : "libc.so.6";
/** RLIMIT_CORE: 4 on Linux, 4 on macOS too. */
const RLIMIT_CORE = 4;

let lib: ReturnType<typeof load> | undefined;

function load() {
  return dlopen(LIBC, {
    dup2: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    setrlimit: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
    tcflow: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
  }).symbols;
}

function libc() {
  lib ??= load();
  return lib;
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
