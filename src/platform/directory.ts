/**
 * Directories held by descriptor, and paths resolved beneath one without following any symlink:
 * what makes "the directory that was checked" and "the directory a workload starts in" the same
 * directory, whatever a racing process renames or replaces in between.
 */
import { chmodSync, closeSync, constants, fstatSync, lstatSync, openSync, readSync, readdirSync, readlinkSync, type BigIntStats, type Dirent } from "node:fs";
import { join } from "node:path";
import { fchdir, openat, openat2Beneath } from "./libc/files.ts";
import { SystemCallError } from "./libc/symbols.ts";
import { errnoOf, hasErrno } from "./errno.ts";
export { identityOf, identityOfStat } from "./identity.ts";
import { isLinux, isMacOS } from "./os.ts";

/** O_CLOEXEC is missing from fs.constants; a descriptor must never reach a workload. */
const O_CLOEXEC = isMacOS ? 0x1000000 : 0o2000000;
/** A directory, never through a symlink at the last component, never inherited. */
const DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | O_CLOEXEC;
/** A file to read, never through a symlink, and O_NONBLOCK so that a FIFO cannot hang the open. */
const READ_FILE = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | O_CLOEXEC;
/** Where a descriptor can be named as a path (Linux). Elsewhere paths are only used for reading names. */

/** Errors that mean "this kernel (or its seccomp filter) has no openat2": fall back to the walk. */
const NO_OPENAT2 = ["ENOSYS", "EPERM", "E2BIG"] as const;
let openat2Available = isLinux;

/**
 * Opens the directory at `path`. Its ancestors may be symlinks (macOS `/tmp` is); the last
 * component may not. Throws the open's error (`code` ENOENT, ENOTDIR, ELOOP…).
 */
export function openDirectory(path: string): number {
  return openSync(path, DIRECTORY);
}

/** Closes a descriptor from this module. */
export function closeDescriptor(fd: number): void {
  closeSync(fd);
}

/**
 * Opens the directory `relative` (no `..`, no leading `/`) beneath the directory `dirFd`,
 * refusing every symlink on the way, even one that stays inside. "" and "." open `dirFd`'s
 * own directory again. Throws with `code` ELOOP (a symlink), ENOENT, ENOTDIR or EXDEV.
 */
export function openBeneath(dirFd: number, relative: string): number {
  const path = relative === "" ? "." : relative;
  if (openat2Available) {
    try {
      return openat2Beneath(dirFd, path, DIRECTORY);
    } catch (error) {
      if (!hasErrno(error, NO_OPENAT2)) throw error;
      openat2Available = false;
    }
  }
  return openBeneathByWalk(dirFd, path);
}

/**
 * The portable form of openBeneath (macOS, Linux before 5.6): one openat per component, each
 * with O_NOFOLLOW | O_DIRECTORY, so no component is ever looked up through a symlink.
 * A symlink component fails with ENOTDIR on Linux and ELOOP on macOS.
 */
export function openBeneathByWalk(dirFd: number, relative: string): number {
  const parts = relative.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.includes("..")) throw new SystemCallError(`openat(${JSON.stringify(relative)})`, "EXDEV");
  let current = openat(dirFd, ".", DIRECTORY);
  for (const part of parts) {
    try {
      const next = openat(current, part, DIRECTORY);
      closeSync(current);
      current = next;
    } catch (error) {
      closeSync(current);
      throw error;
    }
  }
  return current;
}

/**
 * The `cwd` to give Bun.spawn so that the child starts in exactly the directory open at `fd`,
 * without any path being walked again. Linux: `/proc/self/fd/N`, which the child's chdir
 * resolves through its own copy of the descriptor. Elsewhere (macOS, unverified): this process
 * moves into the directory with fchdir and the child's chdir(".") stays there; the caller
 * moves back out with leaveSpawnDirectory once the child exists.
 */
export function spawnDirectory(fd: number): string {
  if (isLinux) return `/proc/self/fd/${fd}`;
  fchdir(fd);
  return ".";
}

/** Undoes spawnDirectory's fchdir (nothing to undo on Linux). */
export function leaveSpawnDirectory(): void {
  if (!isLinux) process.chdir("/");
}

/** The path the kernel knows for the directory open at `fd`, or null where it cannot tell (macOS). */
export function pathOfDescriptor(fd: number): string | null {
  return isLinux ? readlinkSync(`/proc/self/fd/${fd}`) : null;
}

/**
 * The path of a directory held open, for where descriptors cannot name it (macOS): a string, or
 * a function that makes it only when asked (a very deep tree's paths cost O(depth) each).
 */
export type DirectoryPath = string | (() => string);

export function pathText(dirPath: DirectoryPath): string {
  return typeof dirPath === "string" ? dirPath : dirPath();
}

/**
 * A path naming the entry `name` of the directory open at `dirFd` (whose path is `dirPath`):
 * on Linux through the descriptor, so it is looked up in exactly that directory; elsewhere by
 * path. Only for lstat, readlink and readdir: opening goes through openEntry.
 */
export function entryPath(dirFd: number, dirPath: DirectoryPath, name: EntryName): string | Buffer {
  if (typeof name === "string") return isLinux ? `/proc/self/fd/${dirFd}/${name}` : join(pathText(dirPath), name);
  return Buffer.concat([Buffer.from(isLinux ? `/proc/self/fd/${dirFd}/` : `${pathText(dirPath)}/`), name]);
}

/**
 * A directory entry's name: text, or its exact bytes when they are not UTF-8 (a workload may
 * name a file anything; its text form would name another file, or none).
 */
export type EntryName = string | Buffer;

/** Whether a name readdir gave as text may not be the entry's name: bytes that are not UTF-8 read as U+FFFD. */
export function mayNotBeUtf8(name: string): boolean {
  return name.includes("\uFFFD");
}

/** The names of the directory open at `dirFd` that mayNotBeUtf8, as their exact bytes. */
export function undecodedNames(dirFd: number, dirPath: DirectoryPath): Buffer[] {
  const raw = readdirSync(isLinux ? `/proc/self/fd/${dirFd}` : pathText(dirPath), { encoding: "buffer" });
  return raw.filter((name) => mayNotBeUtf8(name.toString()));
}

/** A path of the entry `name` in the directory `parent`: bytes when either is. */
export function childPath(parent: string | Buffer, name: EntryName): string | Buffer {
  if (typeof parent === "string" && typeof name === "string") return join(parent, name);
  return Buffer.concat([Buffer.from(parent), Buffer.from("/"), Buffer.from(name)]);
}

/** The names in the directory open at `dirFd` (read by path where descriptors have none), each exact: bytes when not UTF-8. */
export function listDirectory(dirFd: number, dirPath: string): EntryName[] {
  const names = readdirSync(isLinux ? `/proc/self/fd/${dirFd}` : dirPath);
  if (!names.some(mayNotBeUtf8)) return names;
  return [...names.filter((name) => !mayNotBeUtf8(name)), ...undecodedNames(dirFd, dirPath)];
}

/** lstat of an entry of an open directory, with 64-bit fields. */
export function lstatEntry(dirFd: number, dirPath: DirectoryPath, name: EntryName): BigIntStats {
  return lstatSync(entryPath(dirFd, dirPath, name), { bigint: true });
}

/** Opens the subdirectory `name` of `dirFd` (never through a symlink). */
export function openSubdirectory(dirFd: number, name: EntryName): number {
  return openat(dirFd, name, DIRECTORY);
}

/** The entries of the directory open at `dirFd`, with the type readdir reports (it may be stale). */
export function listEntries(dirFd: number, dirPath: DirectoryPath): Dirent[] {
  return readdirSync(isLinux ? `/proc/self/fd/${dirFd}` : pathText(dirPath), { withFileTypes: true });
}

/**
 * Opens the subdirectory `name` of `dirFd`, never through a symlink, unless it is a mount
 * point: null then. On Linux 5.6+ the kernel decides (openat2 RESOLVE_NO_XDEV refuses any mount,
 * a bind mount of the same filesystem included); elsewhere a mount point is a directory on
 * another device than `dirFd`'s, which misses a bind mount of the same filesystem. Throws the
 * open's error (ENOTDIR, ELOOP for a symlink, ENOENT, EACCES…).
 */
export function openSubdirectoryOnSameMount(dirFd: number, name: EntryName, flags = DIRECTORY): number | null {
  if (openat2Available) {
    try {
      return openat2Beneath(dirFd, name, flags, true);
    } catch (error) {
      if (hasErrno(error, ["EXDEV"])) return null;
      if (!hasErrno(error, NO_OPENAT2)) throw error;
      openat2Available = false;
    }
  }
  const fd = openat(dirFd, name, flags);
  if (fstatSync(fd, { bigint: true }).dev === fstatSync(dirFd, { bigint: true }).dev) return fd;
  closeSync(fd);
  return null;
}

/** Linux's O_PATH: a descriptor naming an inode, opened without any permission on it. */
const O_PATH = 0o10000000;

/**
 * Gives this user rwx on the subdirectory `name` of `dirFd` (a workload may leave `chmod 000`
 * directories behind, which cannot be opened to be emptied), never through a symlink, never
 * across a mount: false when it is a mount point. Linux changes exactly the directory found
 * through an O_PATH descriptor; elsewhere (macOS, unverified) the entry is checked, then
 * changed by path.
 */
export function makeSubdirectoryOwnable(dirFd: number, dirPath: DirectoryPath, name: EntryName): boolean {
  if (!isLinux) {
    if (lstatEntry(dirFd, dirPath, name).isDirectory()) chmodSync(entryPath(dirFd, dirPath, name), 0o700);
    return true;
  }
  const fd = openSubdirectoryOnSameMount(dirFd, name, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW | O_CLOEXEC);
  if (fd === null) return false;
  try {
    chmodSync(`/proc/self/fd/${fd}`, 0o700);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Opens the file `name` of `dirFd` for reading: never through a symlink, never blocking on a
 * FIFO. On Linux through the descriptor's /proc path, which spares inspect loading bun:ffi.
 */
export function openFileBeneath(dirFd: number, name: EntryName): number {
  return isLinux ? openSync(entryPath(dirFd, "", name), READ_FILE) : openat(dirFd, name, READ_FILE);
}

/**
 * Reads at most `max` bytes of the regular file `name` in the directory open at `dirFd`, or
 * returns null when it is not a regular file (missing, a symlink, a FIFO, a directory).
 */
export function readSmallFileBeneath(dirFd: number, name: string, max: number): string | null {
  let fd: number;
  try {
    fd = openFileBeneath(dirFd, name);
  } catch (error) {
    // Any errno, not a named set: whatever keeps it from opening (missing, a symlink, a
    // directory…), it is not a regular file to read. Other failures are thrown.
    if (errnoOf(error) !== undefined) return null;
    throw error;
  }
  try {
    if (!fstatSync(fd).isFile()) return null;
    const buffer = Buffer.alloc(max);
    const length = readSync(fd, buffer, 0, max, 0);
    return buffer.subarray(0, length).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
