import { Database, SQLiteError, constants } from "bun:sqlite";
import { accessSync, constants as fsConstants, existsSync, realpathSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { errnoOf } from "../platform/errno.ts";
import { scrubUrlCredentials } from "../redact.ts";
import { checkHome, ensureHome, homeEntry, resolveHome, type HomeOptions } from "./home.ts";
import { digestInputText } from "./input-digest.ts";
import { WRITER_LOCK_BYTES, withWriterLock, writerLockPath } from "./writer-lock.ts";
import { mark } from "../trace.ts";

/**
 * Bumped on every change. An older database is migrated (MIGRATIONS); a newer one is refused.
 * 2: workspaces record their root's identity (root_identity, checkout_identity, worktree_gitdir),
 *    keep their input without URL credentials plus a keyed digest of it (input_digest),
 *    and the protocol dialect, runtime instance and configuration they belong to (dialect,
 *    instance_id, configuration); the remote_placements table records where each workspace of
 *    a `--remote` runtime lives (src/store/placements.ts); workspaces and executions record
 *    their cgroup (cgroup, see src/containment/cgroup-tree.ts).
 * 3: a destroy that could not finish records why (destroy_problem); each workspace records when
 *    its configuration last listed it (listed_at) and when a reconcile of another configuration
 *    left it behind, an orphan (orphaned_at); the made_branches table keeps the branches a
 *    create made for a workspace id after the workspace is gone (src/store/branches.ts).
 * 4: workspaces record the isolation they were created with (isolation, and sandbox_json for the
 *    sandbox's network and paths; see src/sandbox/isolation.ts), which every later exec and
 *    resume must at least meet. NULL for older rows until their next resume or exec records it.
 * 5: each remote placement records the configuration that made or last listed it
 *    (remote_placements.configuration, src/store/placements.ts): a reconcile forgets only its
 *    own configuration's records. NULL for older rows: nobody's to forget until listed.
 */
export const SCHEMA_VERSION = 5;

/** Where each workspace of a `--remote` runtime lives (src/store/placements.ts). */
const REMOTE_PLACEMENTS = `
CREATE TABLE remote_placements (
  owner TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  host TEXT NOT NULL,
  placed_at INTEGER NOT NULL,
  PRIMARY KEY (owner, workspace_id)
) STRICT;
`;

/** The configuration fingerprint a placement belongs to (schema 5; NULL before). */
const PLACEMENT_CONFIGURATION = "ALTER TABLE remote_placements ADD COLUMN configuration TEXT;\n";

/**
 * The branches a create made in a user's repository, by workspace id, kept after the workspace
 * is gone (src/store/branches.ts): what lets the same workspace be created again on its branch.
 */
const MADE_BRANCHES = `
CREATE TABLE made_branches (
  common_dir TEXT NOT NULL,
  branch TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  owner TEXT NOT NULL,
  base_commit TEXT NOT NULL,
  made_at INTEGER NOT NULL,
  PRIMARY KEY (common_dir, branch)
) STRICT;
`;

/**
 * The isolation a workspace was created with ('none' | 'sandbox'; NULL: made before schema 4,
 * recorded by its next resume or exec) and, for the sandbox, its network and paths as JSON.
 */
const ISOLATION_COLUMNS = ["isolation TEXT CHECK (isolation IN ('none', 'sandbox'))", "sandbox_json TEXT"];

const SCHEMA = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
-- One row per workspace (see src/store/workspaces.ts). status: creating | ready | paused | destroying.
-- lock_*: identity of the process running a long operation on the row (create, pause, resume,
-- destroy); a holder that is no longer alive is detected by identity and its work taken over.
-- child_*: the git process that holder waits for, killed by whoever takes over.
-- input_json: the create input without URL credentials (never stored in clear).
CREATE TABLE workspaces (
  workspace_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('creating', 'ready', 'paused', 'destroying')),
  input_json TEXT NOT NULL,
  host_directory TEXT NOT NULL,
  kind TEXT,
  root TEXT,
  details_json TEXT NOT NULL DEFAULT '{}',
  lock_pid INTEGER,
  lock_start INTEGER,
  lock_boot TEXT,
  lock_op TEXT,
  child_pid INTEGER,
  child_start INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  -- What the root was when created (see src/workspace/confinement.ts): device:inode of the
  -- root and of the owned checkout it lies in, and the worktree registration its .git names.
  -- NULL for a workspace made before schema 2 until an exec or resume records it.
  root_identity TEXT,
  checkout_identity TEXT,
  worktree_gitdir TEXT,
  -- HMAC-SHA-256 of the full create input, credentials included, under the home's input.key
  -- (src/store/input-digest.ts): what a re-create is compared with.
  input_digest TEXT NOT NULL DEFAULT '',
  -- Who it belongs to beyond owner (see src/workspace/owner.ts): the protocol dialect it was
  -- created in ('seed' for every schema 1 row), its daemon's runtimeInstanceId (later dialect
  -- only), and the fingerprint of the daemon configuration that created or last reconciled it
  -- (NULL for a schema 1 row until a reconcile lists it).
  dialect TEXT NOT NULL DEFAULT 'seed' CHECK (dialect IN ('seed', 'later')),
  instance_id TEXT,
  configuration TEXT,
  -- The workspace's cgroup v2 directory once one was made (its limits live there).
  cgroup TEXT,
  -- Why the last destroy stopped before removing everything (status stays 'destroying').
  destroy_problem TEXT,
  -- When its configuration last listed it (create, or a reconcile listing it); NULL: before schema 3.
  listed_at INTEGER,
  -- When a reconcile of another configuration of its owner took over its configuration's
  -- workspaces and did not list this one: an orphan (see src/protocol-ops/reconcile.ts).
  orphaned_at INTEGER,
  ${ISOLATION_COLUMNS.join(",\n  ")}
) STRICT;
CREATE INDEX workspaces_owner ON workspaces (owner);
-- Serializes git worktree changes per repository (its common git dir) within this home:
-- concurrent "git worktree add" in one repository read each other's half-made bookkeeping.
CREATE TABLE repo_locks (
  common_dir TEXT PRIMARY KEY,
  holder_pid INTEGER NOT NULL,
  holder_start INTEGER NOT NULL,
  holder_boot TEXT NOT NULL
) STRICT;
-- One row per execution identity, never reused. finished_at NULL = not known to be finished.
-- cgroup: the execution's own cgroup, recorded before anything is spawned (NULL: process-group
-- containment, whose identity is pid + start time).
CREATE TABLE executions (
  workspace_id TEXT NOT NULL,
  exec_id TEXT NOT NULL,
  mode TEXT NOT NULL,
  purpose TEXT NOT NULL,
  argv0 TEXT NOT NULL,
  pid INTEGER NOT NULL,
  pgid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  boot_id TEXT NOT NULL,
  wrapper_pid INTEGER NOT NULL,
  wrapper_start_ticks INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  exit_code INTEGER,
  exit_signal TEXT,
  cgroup TEXT,
  PRIMARY KEY (workspace_id, exec_id)
) STRICT;
CREATE INDEX executions_live ON executions (workspace_id) WHERE finished_at IS NULL;
${REMOTE_PLACEMENTS}${PLACEMENT_CONFIGURATION}${MADE_BRANCHES}`;

/**
 * From version N to N + 1, run in order inside migrate()'s write transaction (`home` holds the
 * database). Columns are only ever added, so a migrated database is exactly a new one.
 */
const MIGRATIONS: Record<number, (db: Database, home: string) => void> = {
  1: (db, home) => {
    db.run(`
ALTER TABLE workspaces ADD COLUMN root_identity TEXT;
ALTER TABLE workspaces ADD COLUMN checkout_identity TEXT;
ALTER TABLE workspaces ADD COLUMN worktree_gitdir TEXT;
ALTER TABLE workspaces ADD COLUMN input_digest TEXT NOT NULL DEFAULT '';
ALTER TABLE workspaces ADD COLUMN dialect TEXT NOT NULL DEFAULT 'seed' CHECK (dialect IN ('seed', 'later'));
ALTER TABLE workspaces ADD COLUMN instance_id TEXT;
ALTER TABLE workspaces ADD COLUMN configuration TEXT;
ALTER TABLE workspaces ADD COLUMN cgroup TEXT;
ALTER TABLE executions ADD COLUMN cgroup TEXT;
${REMOTE_PLACEMENTS}`);
    removeStoredCredentials(db, home);
  },
  2: (db) => {
    db.run(`
ALTER TABLE workspaces ADD COLUMN destroy_problem TEXT;
ALTER TABLE workspaces ADD COLUMN listed_at INTEGER;
ALTER TABLE workspaces ADD COLUMN orphaned_at INTEGER;
${MADE_BRANCHES}`);
  },
  3: (db) => {
    for (const column of ISOLATION_COLUMNS) db.run(`ALTER TABLE workspaces ADD COLUMN ${column}`);
  },
  4: (db) => {
    db.run(PLACEMENT_CONFIGURATION);
  },
};

/**
 * Version 1 stored each create input verbatim, URL credentials included: keep a digest of it
 * and the input without them. secure_delete zeroes the old text in the pages it leaves;
 * openDatabase then truncates the WAL, which may hold older copies of it.
 */
function removeStoredCredentials(db: Database, home: string): void {
  db.run("PRAGMA secure_delete = ON");
  const rows = db.query("SELECT workspace_id AS id, input_json AS json FROM workspaces").all() as { id: string; json: string }[];
  for (const { id, json } of rows) {
    const scrubbed = JSON.stringify(scrubUrlCredentials(JSON.parse(json)));
    db.run("UPDATE workspaces SET input_json = ?, input_digest = ? WHERE workspace_id = ?", [scrubbed, digestInputText(home, json), id]);
  }
}

/** An open store plus the home it lives in. */
export interface Store {
  db: Database;
  home: string;
  /**
   * Set when the store was found unwritable (storeWriteProblem) by a process that had it open:
   * it must not touch it again, nor close it, nor exit through Bun's exit path, which closes
   * every open database (exec/mirror.ts exits at once instead).
   */
  abandoned?: boolean;
}

/** The database file inside a runtime home. */
export function storePath(home: string): string {
  return homeEntry(home, "store");
}

/** Opens (creating when needed) the store of the home selected by `options`. */
export function openStore(options: HomeOptions): Store {
  const home = ensureHome(resolveHome(options));
  return { db: openDatabase(storePath(home)), home };
}

/** The store of the home `options` select, or null when there is none yet: looking never creates a home. */
export function openExistingStore(options: HomeOptions): Store | null {
  const home = resolveHome(options);
  if (!existsSync(storePath(home))) return null;
  checkHome(home);
  return { db: openDatabase(storePath(home)), home };
}

/** withStore for operations that only look: `absent()` answers when no store exists yet. */
export async function withExistingStore<T>(options: HomeOptions, fn: (store: Store) => T | Promise<T>, absent: () => T): Promise<T> {
  const store = openExistingStore(options);
  return store === null ? absent() : useStore(store, fn);
}

/** Opens the store for `options`, runs `fn` with it (home as a real path), and always closes it. */
export async function withStore<T>(options: HomeOptions, fn: (store: Store) => T | Promise<T>): Promise<T> {
  return useStore(openStore(options), fn);
}

async function useStore<T>(store: Store, fn: (store: Store) => T | Promise<T>): Promise<T> {
  try {
    return await fn({ db: store.db, home: realpathSync(store.home) });
  } finally {
    store.db.close();
    mark("store closed");
  }
}

/** Opens a database file, creating the schema or refusing an unknown version. */
export function openDatabase(path: string): Database {
  const db = new Database(path, { create: true, strict: true });
  try {
    db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    useWal(db);
    // Keep -wal/-shm between processes: every operation is a new process, and deleting and
    // recreating them on each close/open cost ~1.5 ms per call (bench/).
    db.fileControl(constants.SQLITE_FCNTL_PERSIST_WAL, 1);
    // With a size limit, the last connection to close truncates the kept WAL to zero bytes
    // after its checkpoint. Without it the WAL keeps its old frames, and every process, being
    // the first to open the store, rebuilt the WAL index by reading all of them, and fsynced
    // the WAL at close: an inspect of a 1 000-workspace store paid ~3 ms for it (bench/).
    db.run("PRAGMA journal_size_limit = 4194304");
    db.run("PRAGMA synchronous = NORMAL");
    db.run("PRAGMA foreign_keys = ON");
    // The usual case, a store of this version, is read without the write lock (~0.3 ms, and
    // concurrent calls do not queue on it). Anything else is checked again under the write
    // lock: several processes may be creating or migrating the same database.
    if (storedVersion(db) === SCHEMA_VERSION) return db;
    const migrated = writeTransaction(db, () => migrate(db, path));
    if (migrated) db.run("PRAGMA wal_checkpoint(TRUNCATE)");
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** How long a statement waits for another process's lock before SQLite says "database is locked". */
const BUSY_TIMEOUT_MS = 10_000;

/**
 * WAL mode, kept in the file once set. A new file is switched by the first process that asks,
 * and the switch needs the file to itself without waiting for it (SQLite does not call the
 * busy handler there): processes opening a new store at the same moment (parallel creates on
 * a fresh host) were told "database is locked". Retried until it takes, within the busy timeout.
 */
function useWal(db: Database): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      db.run("PRAGMA journal_mode = WAL");
      return;
    } catch (error) {
      if (!(error instanceof SQLiteError && error.code === "SQLITE_BUSY") || Date.now() > deadline) throw error;
      Bun.sleepSync(1 + Math.random() * 4);
    }
  }
}

/** The schema version the database records, or null when it has none (no `meta` table yet). */
function storedVersion(db: Database): number | null {
  const recorded = recordedVersion(db);
  return recorded === null ? null : Number(recorded);
}

/** Whether the database has our `meta` table (a new file has no table at all). */
function hasMetaTable(db: Database): boolean {
  return Boolean(db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get());
}

/** The schema version as the `meta` table records it (text), or null without that table or its row: the one query of it. */
function recordedVersion(db: Database): string | null {
  if (!hasMetaTable(db)) return null;
  const row = db.query("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | null;
  return row?.value ?? null;
}

/** Creates the schema or migrates an older one; true when an existing database was migrated. */
function migrate(db: Database, path: string): boolean {
  if (!hasMetaTable(db)) {
    const tables = db.query("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number };
    if (tables.n > 0) throw new Error(`${path} is not a paseo-host-runtime database (tables without a schema version); refusing to touch it`);
    db.run(SCHEMA);
    db.run("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", [String(SCHEMA_VERSION)]);
    return false;
  }
  const recorded = recordedVersion(db);
  let version = Number(recorded ?? Number.NaN);
  if (!Number.isInteger(version) || version < 1 || version > SCHEMA_VERSION) {
    throw new Error(
      `${path} has schema version ${recorded ?? "(none)"}, this binary understands versions 1 to ${SCHEMA_VERSION}; refusing to change it (use a matching paseo-host-runtime or another stateDirectory)`,
    );
  }
  if (version === SCHEMA_VERSION) return false;
  for (; version < SCHEMA_VERSION; version++) MIGRATIONS[version]!(db, dirname(path));
  db.run("UPDATE meta SET value = ? WHERE key = 'schema_version'", [String(SCHEMA_VERSION)]);
  return true;
}

/**
 * Runs `fn` in its own write transaction, holding the store's writer lock (writer-lock.ts:
 * waiters sleep until it is free and take it in turn) and then SQLite's (BEGIN IMMEDIATE: taken
 * at the start, so a deferred transaction never fails on its first write). busy_timeout is left
 * for what does not take the writer lock: SQLite's own checkpoints and recovery, older binaries.
 */
export function writeTransaction<T>(db: Database, fn: () => T): T {
  const transaction = db.transaction(fn);
  if (db.inTransaction || !isFile(db.filename)) return transaction.immediate();
  return withWriterLock(db.filename, () => transaction.immediate());
}

/** Whether a database lives in a file (not ":memory:" or a temporary one). */
function isFile(filename: string): boolean {
  return filename !== "" && filename !== ":memory:";
}

/** SQLite maps its -shm file in regions of this size (the WAL index); a shorter file faults on access. */
const SHM_REGION_BYTES = 32768;

/**
 * Why the store cannot be written safely right now, or null. A connection maps the WAL index
 * (-shm) and the writer lock shared and writable, so a write through either to a file the
 * kernel now refuses does not fail: it kills the process (SIGBUS). That happens to a file made
 * immutable (ext4 refuses the page fault; access(2) says EPERM), on a read-only filesystem
 * (EROFS), and to a mapped file cut shorter than its mapping. Asked by the exec wrapper before
 * every write after `started`, whose connection predates whatever happened since; a change in
 * the moment between this question and the write is not covered.
 */
export function storeWriteProblem(path: string): string | null {
  const files: [string, number][] = [[path, 0], [`${path}-wal`, 0], [`${path}-shm`, SHM_REGION_BYTES], [writerLockPath(path), WRITER_LOCK_BYTES]];
  for (const [file, mapped] of files) {
    try {
      accessSync(file, fsConstants.W_OK);
      const size = mapped > 0 ? statSync(file).size : 0;
      if (size < mapped) return `${file} is shorter (${size} bytes) than its shared mapping (${mapped} bytes): it was cut short`;
    } catch (error) {
      const code = errnoOf(error);
      // A file deleted under us: the mapping still holds its old inode, which stays writable.
      if (code === "ENOENT") continue;
      const why = code === "EPERM" ? "immutable? lsattr shows it, chattr -i clears it" : code === "EROFS" ? "its filesystem is read-only" : (error as Error).message;
      return `${file} cannot be written (${code}: ${why})`;
    }
  }
  return null;
}

/** Milliseconds since the epoch, the unit of every *_at column. */
export function now(): number {
  return Date.now();
}

/**
 * The schema version a database file records, read without changing anything (no schema made,
 * no migration): for `doctor`. Null when the file has no schema version.
 */
export function readSchemaVersion(path: string): { db: Database; version: number | null } {
  const db = new Database(path, { readonly: true, strict: true });
  try {
    db.run(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    const version = storedVersion(db);
    return { db, version: Number.isInteger(version) ? version : null };
  } catch (error) {
    db.close();
    throw error;
  }
}
