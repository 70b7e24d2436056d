/**
 * A runtime home as the tests see it from outside: its store read directly (rows, and records
 * a test plants: a launched execution without a wrapper, a pid-reuse scenario), the schema 1
 * and 2 fixtures, the workspaces it holds on disk and its log lines.
 */
import { Database } from "bun:sqlite";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../../src/store/db.ts";
import { recordLaunch, reserveExecution, unfinishedExecutions } from "../../src/store/executions.ts";
import { getWorkspace, listWorkspaces, type WorkspaceRecord } from "../../src/store/workspaces.ts";
import { until } from "./poll.ts";
import { cmdlineOf } from "./procs.ts";
import type { LaunchedExecution } from "./records.ts";

/** The store file of a runtime home. */
export function storePath(home: string): string {
  return join(home, "state.sqlite");
}

/** The runtime log of a runtime home (rotated ones beside it: `runtime.log.1` …). */
export function runtimeLogPath(home: string): string {
  return join(home, "log", "runtime.log");
}

/** Records a launched execution in one step, as a wrapper's reservation and launch would (`executionOf` builds one). */
export function insertExecution(db: Database, record: LaunchedExecution): void {
  reserveExecution(db, record);
  recordLaunch(db, record.workspaceId, record.execId, record.pid, record.pgid, record.startTicks);
}

/** The store schema of version 1 (the one fixture of it): migration tests start from a database made by it. */
export const SCHEMA_V1 = readFileSync(join(import.meta.dir, "fixtures", "schema-v1.sql"), "utf8");

/** The store schema of version 2 (its one fixture): the step to version 3 starts from a database made by it. */
export const SCHEMA_V2 = readFileSync(join(import.meta.dir, "fixtures", "schema-v2.sql"), "utf8");

/**
 * An execution's row (every column) as the home's store has it, read-only and without migrating
 * anything (so it also reads an older binary's store, to show what a test catches); null when
 * there is none.
 */
export function executionRow(home: string, execId: string): ({ pid: number; cgroup?: string | null; finished_at: number | null; exit_code: number | null } & Record<string, unknown>) | null {
  const db = new Database(storePath(home), { readonly: true });
  try {
    return db.query("SELECT * FROM executions WHERE exec_id = ?").get(execId) as never;
  } finally {
    db.close();
  }
}

/** The JSON lines of the home's runtime log. */
export function runtimeLogLines(home: string): Record<string, unknown>[] {
  return readFileSync(runtimeLogPath(home), "utf8")
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line));
}

/** Everything under `<home>/workspaces` (relative paths, top two levels). */
export function ownedEntries(home: string): string[] {
  const dir = join(home, "workspaces");
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((key) => {
    const sub = join(dir, key);
    const inner = readdirSync(sub);
    return inner.length === 0 ? [key] : inner.map((name) => `${key}/${name}`);
  });
}

/** The store of a lab's home, read directly (tests only look, or plant fixtures). */
export function withStore<T>(home: string, fn: (db: ReturnType<typeof openDatabase>) => T): T {
  const db = openDatabase(storePath(home));
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** The record of one workspace (any status), or null. */
export function record(home: string, workspaceId: string): WorkspaceRecord | null {
  return withStore(home, (db) => getWorkspace(db, workspaceId));
}

/** Every workspace row of the home. */
export function records(home: string): WorkspaceRecord[] {
  if (!existsSync(storePath(home))) return [];
  return withStore(home, (db) => listWorkspaces(db));
}

/** Unfinished execution rows of a workspace. */
export function liveExecutionRows(home: string, workspaceId: string) {
  return withStore(home, (db) => unfinishedExecutions(db, workspaceId));
}

/**
 * Waits until the workspace row records a git child and that child really is git clone (it is
 * recorded while still the `sh` gate, which exits instead of running git if its creator dies).
 */
export function recordedChild(home: string, id: string): Promise<{ pid: number; startTicks: number }> {
  return until("the create to record a running git clone", () => {
    const child = existsSync(storePath(home)) ? record(home, id)?.child : null;
    // Until the gate opens the child is `/bin/sh -c … git clone …`; after it, argv[0] is git.
    const argv = child ? cmdlineOf(child.pid).split("\0") : [];
    return child && argv[0]?.endsWith("git") && argv.includes("clone") ? child : null;
  });
}
