/** Advisory whole-file locks: flock(2). */
import { libcFunction } from "./symbols.ts";

const flock = libcFunction("flock", { args: ["i32", "i32"], returns: "i32" });

/** flock(2) operations: the same numbers on Linux and macOS. */
const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;

/** Takes an exclusive flock(2) on `fd` without waiting; false when another holder has it. */
export function tryLockExclusive(fd: number): boolean {
  return flock(fd, LOCK_EX | LOCK_NB) === 0;
}

/** Releases a flock(2) taken on `fd` (closing the descriptor releases it too). */
export function unlock(fd: number): void {
  flock(fd, LOCK_UN);
}
