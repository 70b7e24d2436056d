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
 * futex word in a shared mapping of the same file (`released`, bumped by every holder once it
 * let go), and a release that finds the `waiting` flag set wakes the longest waiter: the lock
 * changes hands as soon as it is free, in about the order it was asked for, and a release
 * nobody waits for makes no system call beyond the flock. A waiter also wakes every
 * WAIT_SLICE_MS to look again, which covers a holder that died without its wake-up and a
 * flag that was seen late.
 *
 * The wait is bounded by progress, not length: a queue of any size moves, a hung or stopped
 * holder does not. A waiter gives up (WriterLockStalled, naming the lock file and the holder)
 * only when the lock has not changed hands for STALL_LIMIT_MS.
 */
import { closeSync, constants, fstatSync, ftruncateSync, openSync } from "node:fs";
import { addressOf, waitWhileEqual, wakeUp } from "../platform/libc/futex.ts";
import { tryLockExclusive, unlock } from "../platform/libc/locks.ts";
import { WRITER_LOCK_SUFFIX } from "./home.ts";

/**
 * The file's words: how many times the lock was released (bumped atomically, after the
 * unlock: two releases may overlap); whether anyone waits (set by each waiter before it tries,
 * cleared by the release that wakes one); who holds it (pid, and ms since the epoch in halves).
 */
const RELEASED = 0;
const WAITING = 1;
const HOLDER_PID = 2;
const HOLDER_SINCE_HIGH = 3;
const HOLDER_SINCE_LOW = 4;
const FILE_BYTES = 32;

/** Far longer than any real transaction, including a launch on a machine starting 200 processes. */
const STALL_LIMIT_MS = 30_000;
const WAIT_SLICE_MS = 100;

/** The lock stayed with one holder for the whole stall limit: nothing was written. */
export class WriterLockStalled extends Error {}

interface WriterLock {
  path: string;
  fd: number;
  words: Int32Array;
  /** The address of RELEASED, for the futex calls. */
  released: number;
  /** Nesting depth in this process: a transaction inside a transaction holds it already. */
  depth: number;
}

/** One per lock file and process: flock(2) is per open file, so a second descriptor would wait for the first. */
const locks = new Map<string, WriterLock>();

/** The lock file that belongs to the database at `databasePath`. */
export function writerLockPath(databasePath: string): string {
  return `${databasePath}${WRITER_LOCK_SUFFIX}`;
}

/** The fewest bytes the lock file has once mapped: a shorter one faults (SIGBUS) on the next access. */
export const WRITER_LOCK_BYTES = FILE_BYTES;

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
    // Bun.mmap maps it shared (MAP_SHARED): every process of the home sees the same words.
    const mapping = Bun.mmap(path, { shared: true });
    const lock = { path, fd, words: new Int32Array(mapping.buffer, mapping.byteOffset, FILE_BYTES / 4), released: addressOf(mapping, 0), depth: 0 };
    locks.set(path, lock);
    return lock;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function acquire(lock: WriterLock, stallLimitMs: number): void {
  const { words } = lock;
  if (!tryLockExclusive(lock.fd)) waitFor(lock, stallLimitMs);
  const at = Date.now();
  words[HOLDER_PID] = process.pid;
  words[HOLDER_SINCE_HIGH] = Math.floor(at / 2 ** 32);
  words[HOLDER_SINCE_LOW] = at % 2 ** 32 | 0;
}

/** Sleeps until the lock is ours; throws when it stayed with one holder for the stall limit. */
function waitFor(lock: WriterLock, stallLimitMs: number): void {
  const { words } = lock;
  let seen = Atomics.load(words, RELEASED);
  let since = Date.now();
  for (;;) {
    // Flag, then read the counter, then try: a release after the try changes the counter, and
    // the wait then returns at once instead of sleeping through the wake-up.
    Atomics.store(words, WAITING, 1);
    const current = Atomics.load(words, RELEASED);
    if (current !== seen) [seen, since] = [current, Date.now()];
    if (tryLockExclusive(lock.fd)) return;
    const waited = Date.now() - since;
    if (waited >= stallLimitMs) throw stalled(lock, waited);
    waitWhileEqual(lock.released, seen, Math.min(WAIT_SLICE_MS, stallLimitMs - waited));
  }
}

function release(lock: WriterLock): void {
  const { words } = lock;
  words[HOLDER_PID] = 0;
  unlock(lock.fd);
  // Bumped after the unlock: a waiter whose try came before it sees a new count and does not sleep.
  Atomics.add(words, RELEASED, 1);
  if (Atomics.load(words, WAITING) === 0) return;
  // The one woken sets it again before it tries, so the next release wakes the next.
  Atomics.store(words, WAITING, 0);
  wakeUp(lock.released, 1);
}

function stalled(lock: WriterLock, waitedMs: number): WriterLockStalled {
  const { words } = lock;
  const pid = words[HOLDER_PID]!;
  const since = words[HOLDER_SINCE_HIGH]! * 2 ** 32 + (words[HOLDER_SINCE_LOW]! >>> 0);
  const holder = pid > 0 ? `process ${pid} has held it since ${new Date(since).toISOString()}` : "its holder is unknown";
  return new WriterLockStalled(
    `the store's write lock (${lock.path}) did not change hands for ${Math.round(waitedMs / 1000)} s; ${holder} (hung or stopped?); nothing was changed`,
  );
}
