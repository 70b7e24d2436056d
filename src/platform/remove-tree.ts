/**
 * Recursive removal that never leaves the filesystem it started on (coreutils
 * `rm --one-file-system`, and stricter). Every directory is opened beneath its parent's
 * descriptor, never through a symlink; a directory that is a mount point (another filesystem,
 * or a bind mount of the same one: directory.ts openSubdirectoryOnSameMount) is never descended
 * into, emptied or removed, only reported. Everything else is unlinked by name, never opened, so
 * no file's content is ever touched; a file that is itself a mount point (a bind-mounted file)
 * cannot be unlinked (EBUSY) and is reported the same way.
 */
import { fchmodSync, fstatSync, rmdirSync, unlinkSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { closeDescriptor, entryPath, listEntries, lstatEntry, makeSubdirectoryOwnable, openDirectory, openSubdirectoryOnSameMount } from "./directory.ts";

/** What a removal had to leave, each left exactly as it was found. */
export interface Leftovers {
  /** Absolute paths of the mount points met (the tree's own root included, if it is one). */
  mountPoints: string[];
  /** Entries that could not be removed, with the errno that said why (an immutable file: EPERM). */
  failures: { path: string; code: string }[];
}

/** Removes the tree at `path` (a directory, or anything else); a missing path is already removed. */
export function removeTree(path: string): Leftovers {
  const left: Leftovers = { mountPoints: [], failures: [] };
  let parentFd: number;
  try {
    parentFd = openDirectory(dirname(path));
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return left;
    throw error;
  }
  try {
    removeEntry(parentFd, dirname(path), basename(path), null, left);
  } finally {
    closeDescriptor(parentFd);
  }
  return left;
}

/** Whether the removal left nothing behind. */
export function isComplete(left: Leftovers): boolean {
  return left.mountPoints.length === 0 && left.failures.length === 0;
}

/**
 * Removes the entry `name` of the directory open at `dirFd`. `isDirectory` is what readdir said
 * (null: not known); it only picks what to try first, since the entry may have changed since.
 * Returns false when something inside had to be left.
 */
function removeEntry(dirFd: number, dirPath: string, name: string, isDirectory: boolean | null, left: Leftovers): boolean {
  const path = join(dirPath, name);
  if (isDirectory === false) {
    const unlinked = unlinkEntry(dirFd, dirPath, name, left);
    if (unlinked !== "directory") return unlinked;
  }
  let fd: number | null;
  try {
    fd = openDirectoryEntry(dirFd, dirPath, name);
  } catch (error) {
    const code = errnoOf(error);
    if (code === "ENOENT") return true;
    // Not a directory (any more): a file, a symlink (never followed), a FIFO, a socket…
    if (code === "ENOTDIR" || code === "ELOOP") return unlinkEntry(dirFd, dirPath, name, left) === true;
    left.failures.push({ path, code: code ?? (error as Error).message });
    return false;
  }
  if (fd === null) {
    left.mountPoints.push(path);
    return false;
  }
  let complete = true;
  try {
    makeWritable(fd);
    for (const entry of listEntries(fd, path)) {
      // Files and symlinks are unlinked at once; anything else is tried as a directory first.
      const known = entry.isDirectory() ? true : entry.isFile() || entry.isSymbolicLink() ? false : null;
      complete = removeEntry(fd, path, entry.name, known, left) && complete;
    }
  } finally {
    closeDescriptor(fd);
  }
  // A directory that still holds a mount point or a file that would not go stays too.
  return complete && removeEmptyDirectory(dirFd, dirPath, name, left);
}

/**
 * Opens a directory entry to empty it, or null when it is a mount point. One left `chmod 000`
 * (EACCES) is given rwx first, exactly that directory.
 */
function openDirectoryEntry(dirFd: number, dirPath: string, name: string): number | null {
  try {
    return openSubdirectoryOnSameMount(dirFd, name);
  } catch (error) {
    if (errnoOf(error) !== "EACCES") throw error;
    if (!makeSubdirectoryOwnable(dirFd, dirPath, name)) return null;
    return openSubdirectoryOnSameMount(dirFd, name);
  }
}

/** A workload may leave `chmod -w` directories behind; unlinking inside them needs write permission. */
function makeWritable(fd: number): void {
  const mode = fstatSync(fd).mode & 0o7777;
  if ((mode & 0o700) === 0o700) return;
  try {
    fchmodSync(fd, mode | 0o700);
  } catch {
    // Not ours to change (another user's directory): what it stops is reported entry by entry.
  }
}

/** Unlinks a non-directory; "directory" when it turned out to be one (EISDIR), to be emptied first. */
function unlinkEntry(dirFd: number, dirPath: string, name: string, left: Leftovers): boolean | "directory" {
  try {
    unlinkSync(entryPath(dirFd, dirPath, name));
    return true;
  } catch (error) {
    const code = errnoOf(error);
    if (code === "ENOENT") return true;
    // Linux answers EISDIR, macOS EPERM: either way, a directory is emptied before it goes.
    if (code === "EISDIR" || (code === "EPERM" && isDirectoryEntry(dirFd, dirPath, name))) return "directory";
    return leftBehind(join(dirPath, name), error, left);
  }
}

function removeEmptyDirectory(dirFd: number, dirPath: string, name: string, left: Leftovers): boolean {
  try {
    rmdirSync(entryPath(dirFd, dirPath, name));
    return true;
  } catch (error) {
    return errnoOf(error) === "ENOENT" || leftBehind(join(dirPath, name), error, left);
  }
}

/** Notes what an unlink or rmdir left; false. Something mounted on an entry makes it EBUSY: a mount point, left as it is. */
function leftBehind(path: string, error: unknown, left: Leftovers): false {
  const code = errnoOf(error);
  if (code === "EBUSY") left.mountPoints.push(path);
  else left.failures.push({ path, code: code ?? (error as Error).message });
  return false;
}

function isDirectoryEntry(dirFd: number, dirPath: string, name: string): boolean {
  try {
    return lstatEntry(dirFd, dirPath, name).isDirectory();
  } catch {
    return false;
  }
}

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}
