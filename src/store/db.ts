import { Database, constants } from "bun:sqlite";
import { existsSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { scrubUrlCredentials } from "../redact.ts";
import { checkHome, ensureHome, resolveHome, type HomeOptions } from "./home.ts";
import { digestInputText } from "./input-digest.ts";

/**
 * Bumped on every incompatible change. An older database is migrated (MIGRATIONS); a newer or
 * unknown one is refused.
 */
export const SCHEMA_VERSION = 2;

const SCHEMA = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
-- One row per workspace (see src/store/workspaces.ts). status: creating | ready | paused | destroying.
-- lock_*: identity of the process running a long operation on the row (create, pause, resume,
-- destroy); a holder that is no longer alive is detected by identity and its work taken over.
-- child_*: the git process that holder waits for, killed by whoever takes over.
-- input_json: the create input without URL credentials; input_digest: HMAC-SHA-256 of the
-- full input under the home's input.key (store/input-digest.ts), for the idempotence check.
CREATE TABLE workspaces (
  workspace_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('creating', 'ready', 'paused', 'destroying')),
  input_json TEXT NOT NULL,
  input_digest TEXT NOT NULL,
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
    const migrated = db.transaction(() => migrate(db, path)).immediate();
    if (migrated) db.run("PRAGMA wal_checkpoint(TRUNCATE)");
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Creates or migrates the schema; true when an existing database was migrated. */
function migrate(db: Database, path: string): boolean {
  const hasMeta = db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
  if (!hasMeta) {
    const tables = db.query("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number };
    if (tables.n > 0) throw new Error(`${path} is not a paseo-host-runtime database (tables without a schema version); refusing to touch it`);
    db.run(SCHEMA);
    db.run("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", [String(SCHEMA_VERSION)]);
    return false;
  }
  const row = db.query("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | null;
  let version = row?.value ?? "(none)";
  const found = version;
  while (version !== String(SCHEMA_VERSION) && Object.hasOwn(MIGRATIONS, version)) {
    MIGRATIONS[version]!(db, dirname(path));
    version = String(Number(version) + 1);
    db.run("UPDATE meta SET value = ? WHERE key = 'schema_version'", [version]);
  }
  if (version !== String(SCHEMA_VERSION)) {
    throw new Error(
      `${path} has schema version ${version}, this binary understands versions up to ${SCHEMA_VERSION}; refusing to change it (use a matching paseo-host-runtime or another stateDirectory)`,
    );
  }
  return version !== found;
}

/** Each step takes a database of version N to N + 1, inside the migrating write transaction. */
const MIGRATIONS: Record<string, (db: Database, home: string) => void> = {
  "1": (db, home) => {
    // Version 1 stored the create input verbatim, URL credentials included: keep a digest of
    // it and the input without them. secure_delete zeroes the old text in freed pages;
    // openDatabase then truncates the WAL, which may hold old copies of it.
    db.run("PRAGMA secure_delete = ON");
    db.run("ALTER TABLE workspaces ADD COLUMN input_digest TEXT NOT NULL DEFAULT ''");
    const rows = db.query("SELECT workspace_id AS id, input_json AS json FROM workspaces").all() as { id: string; json: string }[];
    for (const { id, json } of rows) {
      const scrubbed = JSON.stringify(scrubUrlCredentials(JSON.parse(json)));
      db.run("UPDATE workspaces SET input_json = ?, input_digest = ? WHERE workspace_id = ?", [scrubbed, digestInputText(home, json), id]);
    }
  },
};

/** Milliseconds since the epoch, the unit of every *_at column. */
export function now(): number {
  return Date.now();
}
