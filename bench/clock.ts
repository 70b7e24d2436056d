/**
 * The bench's clock: CLOCK_MONOTONIC in nanoseconds, read through bun:ffi.
 *
 * Signal latency compares a timestamp taken here with one taken inside another process's signal
 * handler, so both sides must read the same kernel clock. Bun's `process.hrtime.bigint()` and
 * `performance.now()` both count from this process's start, not from boot: they cannot be compared
 * across processes. `checkHrtime()` measures and records that, so the report says which clock was
 * used and why.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";

const CLOCK_MONOTONIC = process.platform === "darwin" ? 6 : 1;
const LIBC = process.platform === "darwin" ? "libc.dylib" : "libc.so.6";

const { symbols } = dlopen(LIBC, { clock_gettime: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 } });
const timespec = new BigInt64Array(2);
const timespecPtr = ptr(timespec);

/** CLOCK_MONOTONIC now, in nanoseconds (same clock as clock_gettime(CLOCK_MONOTONIC) in C). */
export function monotonicNs(): bigint {
  if (symbols.clock_gettime(CLOCK_MONOTONIC, timespecPtr) !== 0) throw new Error("clock_gettime(CLOCK_MONOTONIC) failed");
  return timespec[0]! * 1_000_000_000n + timespec[1]!;
}

/** Milliseconds between two monotonicNs() readings. */
export function msBetween(from: bigint, to: bigint): number {
  return Number(to - from) / 1e6;
}

/** Whether process.hrtime.bigint() reads CLOCK_MONOTONIC, checked by sandwiching it between two reads. */
export function checkHrtime(): { hrtimeIsMonotonic: boolean; offsetMs: number; clock: string } {
  let inside = 0;
  let offset = 0n;
  const rounds = 200;
  for (let i = 0; i < rounds; i++) {
    const before = monotonicNs();
    const hr = process.hrtime.bigint();
    const after = monotonicNs();
    if (before <= hr && hr <= after) inside++;
    offset = before - hr;
  }
  const hrtimeIsMonotonic = inside === rounds;
  return {
    hrtimeIsMonotonic,
    offsetMs: Number(offset) / 1e6,
    clock: hrtimeIsMonotonic
      ? "CLOCK_MONOTONIC (process.hrtime.bigint() verified equal)"
      : `CLOCK_MONOTONIC via bun:ffi clock_gettime (process.hrtime.bigint() is ${(Number(offset) / 1e6).toFixed(1)} ms behind it: not usable across processes)`,
  };
}
