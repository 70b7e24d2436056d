/**
 * A wait on a 32-bit word of a shared file mapping (Bun.mmap), for a lock whose waiters sleep
 * until it is released (src/store/writer-lock.ts). Linux: futex(2) without the private flag, so
 * every process mapping the same file waits on the same word, woken in FIFO order. Elsewhere
 * (macOS, unverified) no futex: the wait is a short sleep, and the caller polls.
 */
import { isArm64, isLinux } from "../os.ts";
import { ffi, syscall } from "./symbols.ts";

const SYS_FUTEX = isArm64 ? 98 : 202;
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
  syscall(SYS_FUTEX, address, FUTEX_WAIT, expected, timeout);
}

/** Wakes up to `count` processes sleeping in waitWhileEqual on the word at `address` (the longest-waiting first). */
export function wakeUp(address: number, count: number): void {
  if (isLinux) syscall(SYS_FUTEX, address, FUTEX_WAKE, count, 0);
}
