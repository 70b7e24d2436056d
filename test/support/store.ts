/** Store fixtures: the version 1 schema, and records a test plants directly (a launched execution without a wrapper, a pid-reuse scenario). */
import type { Database } from "bun:sqlite";
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
