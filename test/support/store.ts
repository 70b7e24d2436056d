/** Store fixtures: the version 1 and 2 schemas, and records a test plants directly (a launched execution without a wrapper, a pid-reuse scenario). */
import { Database } from "bun:sqlite";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { recordLaunch, reserveExecution, type ExecutionRecord } from "../../src/store/executions.ts";

/** Records a launched execution in one step, as a wrapper's reservation and launch would. */
export function insertExecution(db: Database, record: Omit<ExecutionRecord, "startedAt" | "finishedAt" | "exitCode" | "exitSignal" | "cgroup"> & { cgroup?: string | null }): void {
  reserveExecution(db, record);
  recordLaunch(db, record.workspaceId, record.execId, record.pid, record.pgid, record.startTicks);
}

/** The store schema of version 1 (the one fixture of it): migration tests start from a database made by it. */
export const SCHEMA_V1 = readFileSync(join(import.meta.dir, "fixtures", "schema-v1.sql"), "utf8");

/** The store schema of version 2 (its one fixture): the step to version 3 starts from a database made by it. */
export const SCHEMA_V2 = readFileSync(join(import.meta.dir, "fixtures", "schema-v2.sql"), "utf8");

/** An execution's row as the home's store has it, read without changing anything; null when there is none. */
export function executionRow(home: string, execId: string): { pid: number; finished_at: number | null; exit_code: number | null } | null {
  const db = new Database(join(home, "state.sqlite"), { readonly: true });
  try {
    return db.query("SELECT pid, finished_at, exit_code FROM executions WHERE exec_id = ?").get(execId) as never;
  } finally {
    db.close();
  }
}

/** The JSON lines of the home's runtime log. */
export function runtimeLogLines(home: string): Record<string, unknown>[] {
  return readFileSync(join(home, "log", "runtime.log"), "utf8")
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line));
}
