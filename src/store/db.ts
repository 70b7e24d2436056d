import { Database, constants } from "bun:sqlite";
import { existsSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { checkHome, ensureHome, resolveHome, type HomeOptions } from "./home.ts";

/** Bumped on every incompatible change; a database from another version is refused. */
export const SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
-- One row per workspace (see src/store/workspaces.ts). status: creating | ready | paused | destroying.
-- lock_*: identity of the process running a long operation on the row (create, pause, resume,
-- destroy); a holder that is no longer alive is detected by identity and its work taken over.
-- child_*: the git process that holder waits for, killed by whoever takes over.
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
  updated_at INTEGER NOT NULL
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
  PRIMARY KEY (workspace_id, exec_id)
) STRICT;
CREATE INDEX executions_live ON executions (workspace_id) WHERE finished_at IS NULL;
`;

/** An open store plus the home it lives in. */
export interface Store {
  db: Database;
  home: string;
}

/** The database file inside a runtime home. */
export function storePath(home: string): string {
  return join(home, "state.sqlite");
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
  if (!existsSync(storePath(resolveHome(options)))) return absent();
  return withStore(options, fn);
}

/** Opens the store for `options`, runs `fn` with it (home as a real path), and always closes it. */
export async function withStore<T>(options: HomeOptions, fn: (store: Store) => T | Promise<T>): Promise<T> {
  const store = openStore(options);
  try {
    return await fn({ db: store.db, home: realpathSync(store.home) });
  } finally {
    store.db.close();
  }
}

/** Opens a database file, creating the schema or refusing an unknown version. */
export function openDatabase(path: string): Database {
  const db = new Database(path, { create: true, strict: true });
  try {
    db.run("PRAGMA busy_timeout = 10000");
    db.run("PRAGMA journal_mode = WAL");
    // Keep -wal/-shm between processes: every operation is a new process, and deleting and
    // recreating them on each close/open cost ~1.5 ms per call (bench/).
    db.fileControl(constants.SQLITE_FCNTL_PERSIST_WAL, 1);
    db.run("PRAGMA synchronous = NORMAL");
    db.run("PRAGMA foreign_keys = ON");
    // Checked under the write lock: several processes may be creating the same new database.
    db.transaction(() => migrate(db, path)).immediate();
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

function migrate(db: Database, path: string): void {
  const hasMeta = db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
  if (!hasMeta) {
    const tables = db.query("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number };
    if (tables.n > 0) throw new Error(`${path} is not a paseo-host-runtime database (tables without a schema version); refusing to touch it`);
    db.run(SCHEMA);
    db.run("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", [String(SCHEMA_VERSION)]);
    return;
  }
  const row = db.query("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | null;
  if (row?.value !== String(SCHEMA_VERSION)) {
    throw new Error(
      `${path} has schema version ${row?.value ?? "(none)"}, this binary understands only version ${SCHEMA_VERSION}; refusing to change it (use a matching paseo-host-runtime or another stateDirectory)`,
    );
  }
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
    db.run("PRAGMA busy_timeout = 10000");
    const hasMeta = db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
    const row = hasMeta ? (db.query("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | null) : null;
    const version = row === null ? null : Number(row.value);
    return { db, version: Number.isInteger(version) ? version : null };
  } catch (error) {
    db.close();
    throw error;
  }
}
