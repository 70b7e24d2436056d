/**
 * What a file or directory is, as opposed to where it is: `device:inode` in decimal (st_ino is
 * 64-bit). A leaf of node:fs alone, so the sandbox init (bundled on its own, see
 * src/sandbox/init-bundle.ts) compares identities the way the wrapper wrote them without
 * pulling in directory.ts and its libc calls.
 */
import { fstatSync, type BigIntStats } from "node:fs";

/** The identity of what `stat` describes. */
export function identityOfStat(stat: BigIntStats): string {
  return `${stat.dev}:${stat.ino}`;
}

/** The identity of what descriptor `fd` is open on (a directory, for the callers). */
export function identityOf(fd: number): string {
  return identityOfStat(fstatSync(fd, { bigint: true }));
}
