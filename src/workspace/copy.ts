/**
 * A copy of a host directory that is not a git repository (`hostDirectory: "clone"`).
 *
 * - Never follows a symlink: links are recreated as links, and every entry is opened beneath
 *   its parent's descriptor with O_NOFOLLOW, so a tree changed while we copy cannot lead us out.
 * - Regular files keep their holes (see platform/file-data.ts) and lose setuid/setgid: the copy
 *   belongs to the daemon's user, whoever owned the original.
 * - Hard links inside the tree stay hard links (one inode, as in the source); a file linked
 *   from outside the tree is copied like any other.
 * - FIFOs, sockets and device nodes are skipped and listed in one diagnostic; none is ever
 *   opened, so a FIFO cannot hang the copy.
 */
import { closeSync, fchmodSync, fstatSync, linkSync, mkdirSync, chmodSync, openSync, readlinkSync, symlinkSync, constants, type BigIntStats } from "node:fs";
import { join } from "node:path";
import { pulse } from "../keepalive.ts";
import { diagnose } from "../output.ts";
import { childPath, closeDescriptor, entryPath, identityOf, identityOfStat, listDirectory, lstatEntry, openDirectory, openFileBeneath, openSubdirectory, type EntryName } from "../platform/directory.ts";
import { copyFileData } from "../platform/file-data.ts";

/** Permission bits a copy keeps: setuid and setgid are dropped; a directory keeps its sticky bit (BSDs refuse it on files). */
const FILE_MODE = 0o777;
const DIRECTORY_MODE = 0o1777;
/** How many skipped entries the diagnostic names before summarizing. */
const NAMED_SKIPS = 10;

/** What one copy has seen so far. */
interface CopyState {
  /** device:inode of a source file with other links → the first copy made of it. */
  linked: Map<string, string | Buffer>;
  skipped: string[];
}

/** Copies the directory `from` into the new directory `to` (see the module comment). */
export function copyTree(from: string, to: string): void {
  const state: CopyState = { linked: new Map(), skipped: [] };
  const fd = openDirectory(from);
  try {
    copyDirectory(fd, from, to, "", state);
  } finally {
    closeDescriptor(fd);
  }
  reportSkipped(from, state.skipped);
}

/**
 * Names are the entries' exact bytes when they are not UTF-8 (listDirectory), and so are the
 * paths made from them (`target`) and symlinks' targets: a copy never renames a user's file.
 */
function copyDirectory(dirFd: number, source: string, target: string | Buffer, relative: string, state: CopyState): void {
  mkdirSync(target, { mode: 0o700 });
  for (const name of listDirectory(dirFd, source)) {
    // A copy of a large tree is one long synchronous step: a `--remote` caller still sees progress.
    pulse();
    const stat = lstatEntry(dirFd, source, name);
    const shown = relative === "" ? String(name) : `${relative}/${String(name)}`;
    const into = childPath(target, name);
    if (stat.isDirectory()) copySubdirectory(dirFd, join(source, String(name)), into, shown, name, stat, state);
    else if (stat.isFile()) copyFile(dirFd, name, into, shown, stat, state);
    else if (stat.isSymbolicLink()) symlinkSync(readlinkSync(entryPath(dirFd, source, name), { encoding: "buffer" }), into);
    else state.skipped.push(`${shown} (${kindOf(stat)})`);
  }
  chmodSync(target, Number(fstatSync(dirFd).mode) & DIRECTORY_MODE);
}

function copySubdirectory(parentFd: number, source: string, target: string | Buffer, shown: string, name: EntryName, stat: BigIntStats, state: CopyState): void {
  const fd = openSubdirectory(parentFd, name);
  try {
    requireSame(fd, stat, shown);
    copyDirectory(fd, source, target, shown, state);
  } finally {
    closeDescriptor(fd);
  }
}

function copyFile(parentFd: number, name: EntryName, target: string | Buffer, shown: string, stat: BigIntStats, state: CopyState): void {
  const key = identityOfStat(stat);
  const first = stat.nlink > 1n ? state.linked.get(key) : undefined;
  if (first !== undefined) return linkSync(first, target);
  const from = openFileBeneath(parentFd, name);
  try {
    requireSame(from, stat, shown);
    const to = openSync(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      copyFileData(from, to);
      fchmodSync(to, Number(stat.mode) & FILE_MODE);
    } finally {
      closeSync(to);
    }
  } finally {
    closeDescriptor(from);
  }
  if (stat.nlink > 1n) state.linked.set(key, target);
}

/** The entry opened is the one examined: a swap between lstat and open is refused. */
function requireSame(fd: number, stat: BigIntStats, shown: string): void {
  if (identityOf(fd) !== identityOfStat(stat)) throw new Error(`${shown} changed while it was being copied; try again`);
}

function kindOf(stat: BigIntStats): string {
  if (stat.isFIFO()) return "FIFO";
  if (stat.isSocket()) return "socket";
  if (stat.isCharacterDevice()) return "character device";
  if (stat.isBlockDevice()) return "block device";
  return "unknown type";
}

function reportSkipped(from: string, skipped: string[]): void {
  if (skipped.length === 0) return;
  const named = skipped.slice(0, NAMED_SKIPS).join(", ");
  const more = skipped.length > NAMED_SKIPS ? ` and ${skipped.length - NAMED_SKIPS} more` : "";
  diagnose(`copy of ${from}: skipped ${skipped.length} ${skipped.length === 1 ? "entry" : "entries"} that cannot be copied (only files, directories and symlinks are): ${named}${more}`);
}
