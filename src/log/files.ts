/**
 * The runtime log's files in a home, and the one lock every process takes to touch them.
 *
 * `<home>/log/runtime.log` is appended to; when a line would take it past the size bound it
 * is renamed to `runtime.log.1` (`.1` → `.2`, …; the oldest, `.ROTATED_FILES`, is dropped).
 * Every writer holds an exclusive flock(2) on `runtime.log.lock` from opening the file to
 * closing it, and rotation happens under the same lock, so no descriptor ever spans a
 * rotation: no line lands in a file that is being dropped, and none is split by another.
 */
import { closeSync, constants, existsSync, fchmodSync, fstatSync, mkdirSync, openSync, renameSync, writeSync } from "node:fs";
import { join } from "node:path";
import { tryLockExclusive, unlock } from "../platform/libc/locks.ts";
import { hasErrno, PATH_MISSING, tolerating } from "../platform/errno.ts";
import { checkHome, checkPrivateDirectory, homeEntry } from "../store/home.ts";

const LOG_FILE = "runtime.log";
const LOCK_FILE = "runtime.log.lock";
/** How many rotated files are kept besides runtime.log. */
const ROTATED_FILES = 3;
/**
 * How long a process waits for the lock before it appends without it (one O_APPEND write,
 * no rotation): a holder stopped by SIGSTOP or a debugger must not stall every operation.
 */
const LOCK_WAIT_MS = 200;

/** `<home>/log`. */
export function logDirectory(home: string): string {
  return homeEntry(home, "log");
}

/** runtime.log (index 0) or runtime.log.N. */
export function logFilePath(directory: string, index = 0): string {
  return join(directory, index === 0 ? LOG_FILE : `${LOG_FILE}.${index}`);
}

/**
 * Creates `<home>/log` (mode 0700) in an existing home and checks it like the home itself.
 * Never creates the home: returns null when there is none (nothing happened there to log).
 */
export function ensureLogDirectory(home: string): string | null {
  try {
    checkHome(home);
  } catch (error) {
    // No home (or a path through a file, which create reports itself): no log.
    if (hasErrno(error, PATH_MISSING)) return null;
    throw error;
  }
  const directory = logDirectory(home);
  // Made once per home; every later process only looks (a thrown EEXIST costs more than a stat).
  if (!existsSync(directory)) tolerating(["EEXIST"], undefined, () => mkdirSync(directory, { mode: 0o700 }));
  checkPrivateDirectory(directory, "runtime log directory");
  return directory;
}

/**
 * Runs `fn` holding the log lock (`locked` false when it could not be had in time). Writers
 * create the lock file; a reader only opens it read-only (flock needs no write access), so an
 * operator reading as another user never leaves a file the daemon's user cannot open.
 */
function withLogLock<T>(directory: string, fn: (locked: boolean) => T, writer = true): T {
  let fd: number;
  try {
    const flags = writer ? constants.O_RDWR | constants.O_CREAT : constants.O_RDONLY;
    fd = openSync(join(directory, LOCK_FILE), flags | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if (writer || !hasErrno(error, ["ENOENT"])) throw error;
    return fn(false);
  }
  try {
    const locked = acquire(fd);
    try {
      return fn(locked);
    } finally {
      if (locked) unlock(fd);
    }
  } finally {
    closeSync(fd);
  }
}

function acquire(fd: number): boolean {
  if (tryLockExclusive(fd)) return true;
  const deadline = performance.now() + LOCK_WAIT_MS;
  while (performance.now() < deadline) {
    Bun.sleepSync(1);
    if (tryLockExclusive(fd)) return true;
  }
  return false;
}

/**
 * Appends one line (newline included) to runtime.log, rotating first when the line would take
 * the file past `maxBytes` (a file never exceeds the bound unless one line alone does).
 */
export function appendLine(directory: string, line: Uint8Array, maxBytes: number): void {
  withLogLock(directory, (locked) => {
    let file = openForAppend(directory);
    try {
      if (locked && file.size > 0 && file.size + line.length > maxBytes) {
        closeSync(file.fd);
        rotate(directory);
        file = openForAppend(directory);
      }
      writeLine(file.fd, line, locked);
    } finally {
      closeSync(file.fd);
    }
  });
}

/**
 * Under the lock a short write (disk nearly full) is continued: nobody else can write in
 * between. Without it, one O_APPEND write only: continuing could interleave with another line.
 */
function writeLine(fd: number, line: Uint8Array, locked: boolean): void {
  let offset = 0;
  do {
    const written = writeSync(fd, line, offset, line.length - offset);
    if (written <= 0) throw new Error("the runtime log accepted no bytes");
    offset += written;
  } while (locked && offset < line.length);
}

/** Opens runtime.log for appending (created 0600; a symlink is refused) and returns it with its size. */
function openForAppend(directory: string): { fd: number; size: number } {
  const path = logFilePath(directory);
  const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error(`${path} is not a regular file`);
    // Created 0600; one loosened by hand (or by a umask-less copy) is closed again.
    if ((stat.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
    return { fd, size: stat.size };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** Shifts runtime.log → .1 → .2 …, dropping the oldest. Only ever called under the lock. */
function rotate(directory: string): void {
  for (let index = ROTATED_FILES - 1; index >= 0; index--) {
    // A rotated file that does not exist yet (a young log) is simply not shifted.
    tolerating(["ENOENT"], undefined, () => renameSync(logFilePath(directory, index), logFilePath(directory, index + 1)));
  }
}

/** One of the log's files, open for reading. */
export interface OpenLogFile {
  path: string;
  fd: number;
  /** Inode: how a follower recognises the file it was reading after a rotation renamed it. */
  ino: number;
}

/**
 * Opens every file of the log, oldest first, all under the lock so that no rotation falls
 * between two opens. The caller closes them. Without the lock in time, files that turn out
 * to be the same one (a rotation raced the opens) are kept once.
 */
export function openLogFiles(directory: string): OpenLogFile[] {
  return withLogLock(directory, () => {
    const files: OpenLogFile[] = [];
    for (let index = ROTATED_FILES; index >= 0; index--) {
      const path = logFilePath(directory, index);
      const fd = tolerating(["ENOENT"], null, () => openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW));
      if (fd === null) continue;
      const ino = fstatSync(fd).ino;
      if (files.some((file) => file.ino === ino)) closeSync(fd);
      else files.push({ path, fd, ino });
    }
    return files;
  }, false);
}
