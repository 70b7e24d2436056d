/**
 * The store's write lock, taken before SQLite's own (BEGIN IMMEDIATE) by every write
 * transaction of every process of a home.
 *
 * SQLite's busy handler polls for its lock with growing sleeps (up to 100 ms) and no order:
 * with 200 execs starting at once on 2 cores, the lock sat free while its waiters slept, and
 * an unlucky waiter kept losing to newcomers until its busy_timeout (10 s) ran out and its
 * exec was refused with "database is locked" (bench/README.md, 2026-12-01 `lockwait`).
 *
 * Here a writer holds an exclusive flock(2) on `<database>.writer-lock` around its whole
 * transaction; the kernel drops it when the holder dies, however it dies. Waiters sleep on a
 * futex word in a shared mapping of the same file (`released`, bumped by every holder as it
 * lets go), and each release wakes the longest waiter: the lock changes hands as soon as it is
 * free, in about the order it was asked for. A waiter also wakes every WAIT_SLICE_MS to look
 * again, which covers a holder that died without its wake-up.
 *
 * The wait is bounded by progress, not length: a queue of any size moves, a hung or stopped
 * holder does not. A waiter gives up (WriterLockStalled, naming the lock file and the holder)
 * only when the lock has not changed hands for STALL_LIMIT_MS.
 */
import { closeSync, constants, fstatSync, ftruncateSync, openSync } from "node:fs";
import { mapShared, tryLockExclusive, unlock, waitWhileEqual, wakeUp, type SharedWords } from "../platform/libc.ts";

/** The page's words: how many times the lock was released, and who holds it (pid; ms since the epoch, in two halves). */
const RELEASED = 0;
const HOLDER_PID = 1;
const HOLDER_SINCE_HIGH = 2;
const HOLDER_SINCE_LOW = 3;
const FILE_BYTES = 16;

/** Far longer than any real transaction, including a launch on a machine starting 200 processes. */
export const STALL_LIMIT_MS = 30_000;
const WAIT_SLICE_MS = 100;

/** The lock stayed with one holder for the whole stall limit: nothing was written. */
export class WriterLockStalled extends Error {}

interface WriterLock {
  path: string;
  fd: number;
  shared: SharedWords;
  /** Nesting depth in this process: a transaction inside a transaction holds it already. */
  depth: number;
}

/** One per lock file and process: flock(2) is per open file, so a second descriptor would wait for the first. */
const locks = new Map<string, WriterLock>();

/** The lock file that belongs to the database at `databasePath`. */
export function writerLockPath(databasePath: string): string {
  return `${databasePath}.writer-lock`;
}

/** Runs `fn` holding the writer lock of the database at `databasePath`. */
export function withWriterLock<T>(databasePath: string, fn: () => T, stallLimitMs = STALL_LIMIT_MS): T {
  const lock = openLock(writerLockPath(databasePath));
  if (lock.depth === 0) acquire(lock, stallLimitMs);
  lock.depth++;
  try {
    return fn();
  } finally {
    lock.depth--;
    if (lock.depth === 0) release(lock);
  }
}

function openLock(path: string): WriterLock {
  const known = locks.get(path);
  if (known) return known;
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    // Growing it is idempotent, so concurrent first openers agree; it never shrinks.
    if (fstatSync(fd).size < FILE_BYTES) ftruncateSync(fd, FILE_BYTES);
    const lock = { path, fd, shared: mapShared(fd, FILE_BYTES), depth: 0 };
    locks.set(path, lock);
    return lock;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function acquire(lock: WriterLock, stallLimitMs: number): void {
  const { words } = lock.shared;
  let seen = words[RELEASED]!;
  let since = Date.now();
  // Read the counter before each try: a release between the try and the wait changes it, and
  // the wait then returns at once instead of sleeping through the wake-up.
  while (!tryLockExclusive(lock.fd)) {
    const now = Date.now();
    if (now - since >= stallLimitMs) throw stalled(lock, now - since);
    waitWhileEqual(lock.shared, RELEASED, seen, Math.min(WAIT_SLICE_MS, stallLimitMs - (now - since)));
    const current = words[RELEASED]!;
    if (current !== seen) [seen, since] = [current, Date.now()];
  }
  const at = Date.now();
  words[HOLDER_PID] = process.pid;
  words[HOLDER_SINCE_HIGH] = Math.floor(at / 2 ** 32);
  words[HOLDER_SINCE_LOW] = at % 2 ** 32 | 0;
}

function release(lock: WriterLock): void {
  const { words } = lock.shared;
  words[HOLDER_PID] = 0;
  // Bumped while still held: only the holder writes it.
  words[RELEASED] = (words[RELEASED]! + 1) | 0;
  unlock(lock.fd);
  wakeUp(lock.shared, RELEASED, 1);
}

function stalled(lock: WriterLock, waitedMs: number): WriterLockStalled {
  const { words } = lock.shared;
  const pid = words[HOLDER_PID]!;
  const since = words[HOLDER_SINCE_HIGH]! * 2 ** 32 + (words[HOLDER_SINCE_LOW]! >>> 0);
  const holder = pid > 0 ? `process ${pid} has held it since ${new Date(since).toISOString()}` : "its holder is unknown";
  return new WriterLockStalled(
    `the store's write lock (${lock.path}) did not change hands for ${Math.round(waitedMs / 1000)} s; ${holder} (hung or stopped?); nothing was changed`,
  );
}
