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
import { closeDescriptor, type DirectoryPath, type EntryName, entryPath, identityOf, listEntries, lstatEntry, makeSubdirectoryOwnable, openDirectory, pathText, openSubdirectory, openSubdirectoryOnSameMount, mayNotBeUtf8, undecodedNames } from "./directory.ts";
import { errnoOf, PATH_MISSING, tolerating } from "./errno.ts";

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
 * How many directories of the path being emptied stay open. Deeper ones are closed while their
 * subtree is emptied and opened again through `..` (checked to be the same directory): a tree
 * a workload made 100 000 levels deep then costs neither descriptors nor stack.
 */
const OPEN_LEVELS = 32;

/** An entry to remove: its name, and whether readdir said it is a directory (null: not known). */
interface Entry {
  name: EntryName;
  isDirectory: boolean | null;
}

/** A directory being emptied: its descriptor (-1 while closed), identity, and entries still to visit. */
interface Level {
  fd: number;
  name: EntryName;
  identity: string;
  entries: Entry[];
  next: number;
  /** False once something inside it had to be left. */
  complete: boolean;
}

/**
 * Removes the entry `name` of the directory open at `dirFd`. `isDirectory` is what readdir said
 * (null: not known); it only picks what to try first, since the entry may have changed since.
 * Returns false when something inside had to be left. Directories are walked with a stack of
 * Levels, not recursion (see OPEN_LEVELS).
 */
function removeEntry(dirFd: number, dirPath: string, name: EntryName, isDirectory: boolean | null, left: Leftovers): boolean {
  const top = enter(dirFd, dirPath, name, isDirectory, left);
  if (typeof top === "boolean") return top;
  const stack: Level[] = [top];
  // Made only when asked (a report, or macOS, which has no descriptor paths).
  const pathOf = (depth: number) => () => join(dirPath, ...stack.slice(0, depth + 1).map((level) => String(level.name)));
  for (;;) {
    const level = stack.at(-1)!;
    const entry = level.entries[level.next++];
    if (entry) {
      const child = enter(level.fd, pathOf(stack.length - 1), entry.name, entry.isDirectory, left);
      if (child === false) level.complete = false;
      if (typeof child === "boolean") continue;
      stack.push(child);
      const far = stack[stack.length - 1 - OPEN_LEVELS];
      if (far && far.fd >= 0) closeLevel(far);
      continue;
    }
    // Emptied as far as it goes: remove it from its parent (reopened through `..` if closed).
    stack.pop();
    const parent = stack.at(-1);
    let removed = false;
    try {
      const parentFd = parent ? reopen(parent, level) : dirFd;
      const parentPath = parent ? pathOf(stack.length - 1) : dirPath;
      closeLevel(level);
      // A directory that still holds a mount point or a file that would not go stays too.
      removed = level.complete && removeEmptyDirectory(parentFd, parentPath, level.name, left);
    } catch (error) {
      closeLevel(level);
      left.failures.push({ path: parent ? pathOf(stack.length - 1)() : dirPath, code: errnoOf(error) ?? (error as Error).message });
      for (const open of stack) closeLevel(open);
      return false;
    }
    if (!parent) return removed;
    if (!removed) parent.complete = false;
  }
}

/**
 * Starts on one entry: a non-directory is unlinked (true, or false when it had to be left); a
 * directory is opened and listed, to be emptied (a Level); a mount point is reported (false).
 */
function enter(dirFd: number, dirPath: DirectoryPath, name: EntryName, isDirectory: boolean | null, left: Leftovers): Level | boolean {
  const path = () => join(pathText(dirPath), String(name));
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
    left.failures.push({ path: path(), code: code ?? (error as Error).message });
    return false;
  }
  if (fd === null) {
    left.mountPoints.push(path());
    return false;
  }
  try {
    makeWritable(fd);
    return { fd, name, identity: identityOf(fd), entries: entriesOf(fd, path), next: 0, complete: true };
  } catch (error) {
    closeDescriptor(fd);
    left.failures.push({ path: path(), code: errnoOf(error) ?? (error as Error).message });
    return false;
  }
}

/**
 * The entries of the directory open at `fd`. Files and symlinks are unlinked at once; anything
 * else is tried as a directory first. A name that is not UTF-8 is read as text with U+FFFD in
 * it, which names another file or none: such names are read again as their bytes.
 */
function entriesOf(fd: number, path: DirectoryPath): Entry[] {
  const entries = listEntries(fd, path);
  const text = entries.map((entry) => ({ name: entry.name, isDirectory: entry.isDirectory() ? true : entry.isFile() || entry.isSymbolicLink() ? false : null }));
  if (!entries.some((entry) => mayNotBeUtf8(entry.name))) return text;
  return [...text.filter((entry) => !mayNotBeUtf8(entry.name)), ...undecodedNames(fd, path).map((name) => ({ name, isDirectory: null }))];
}

/** The open descriptor of `parent`, opened again through `..` of `child` when it was closed; throws when that is not the same directory. */
function reopen(parent: Level, child: Level): number {
  if (parent.fd >= 0) return parent.fd;
  const fd = openSubdirectory(child.fd, "..");
  if (identityOf(fd) !== parent.identity) {
    closeDescriptor(fd);
    throw Object.assign(new Error("the directory was moved while it was being removed"), { code: "EXDEV" });
  }
  parent.fd = fd;
  return fd;
}

function closeLevel(level: Level): void {
  if (level.fd < 0) return;
  closeDescriptor(level.fd);
  level.fd = -1;
}

/**
 * Opens a directory entry to empty it, or null when it is a mount point. One left `chmod 000`
 * (EACCES) is given rwx first, exactly that directory.
 */
function openDirectoryEntry(dirFd: number, dirPath: DirectoryPath, name: EntryName): number | null {
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
  // Not ours to change (another user's directory, a read-only mount): what it stops is reported entry by entry.
  tolerating(["EPERM", "EROFS"], undefined, () => fchmodSync(fd, mode | 0o700));
}

/** Unlinks a non-directory; "directory" when it turned out to be one (EISDIR), to be emptied first. */
function unlinkEntry(dirFd: number, dirPath: DirectoryPath, name: EntryName, left: Leftovers): boolean | "directory" {
  try {
    unlinkSync(entryPath(dirFd, dirPath, name));
    return true;
  } catch (error) {
    const code = errnoOf(error);
    if (code === "ENOENT") return true;
    // Linux answers EISDIR, macOS EPERM: either way, a directory is emptied before it goes.
    if (code === "EISDIR" || (code === "EPERM" && isDirectoryEntry(dirFd, dirPath, name))) return "directory";
    return leftBehind(join(pathText(dirPath), String(name)), error, left);
  }
}

function removeEmptyDirectory(dirFd: number, dirPath: DirectoryPath, name: EntryName, left: Leftovers): boolean {
  try {
    rmdirSync(entryPath(dirFd, dirPath, name));
    return true;
  } catch (error) {
    return errnoOf(error) === "ENOENT" || leftBehind(join(pathText(dirPath), String(name)), error, left);
  }
}

/** Notes what an unlink or rmdir left; false. Something mounted on an entry makes it EBUSY: a mount point, left as it is. */
function leftBehind(path: string, error: unknown, left: Leftovers): false {
  const code = errnoOf(error);
  if (code === "EBUSY") left.mountPoints.push(path);
  else left.failures.push({ path, code: code ?? (error as Error).message });
  return false;
}

function isDirectoryEntry(dirFd: number, dirPath: DirectoryPath, name: EntryName): boolean {
  // Gone since it was listed: nothing to descend into.
  return tolerating(PATH_MISSING, false, () => lstatEntry(dirFd, dirPath, name).isDirectory());
}
