import type { Database } from "bun:sqlite";
import { now } from "./db.ts";

/** The durable record of one execution identity. */
export interface ExecutionRecord {
  workspaceId: string;
  execId: string;
  mode: "pipes" | "pty";
  purpose: string;
  argv0: string;
  pid: number;
  pgid: number;
  startTicks: number;
  bootId: string;
  wrapperPid: number;
  wrapperStartTicks: number;
  startedAt: number;
  finishedAt: number | null;
  exitCode: number | null;
  exitSignal: string | null;
}

const COLUMNS = `workspace_id AS workspaceId, exec_id AS execId, mode, purpose, argv0, pid, pgid,
  start_ticks AS startTicks, boot_id AS bootId, wrapper_pid AS wrapperPid,
  wrapper_start_ticks AS wrapperStartTicks, started_at AS startedAt, finished_at AS finishedAt,
  exit_code AS exitCode, exit_signal AS exitSignal`;

/** Records a launched execution. Fails when the identity was ever used in this workspace. */
export function insertExecution(db: Database, record: Omit<ExecutionRecord, "startedAt" | "finishedAt" | "exitCode" | "exitSignal">): void {
  db.query(
    `INSERT INTO executions (workspace_id, exec_id, mode, purpose, argv0, pid, pgid, start_ticks, boot_id,
       wrapper_pid, wrapper_start_ticks, started_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)`,
  ).run(
    record.workspaceId,
    record.execId,
    record.mode,
    record.purpose,
    record.argv0,
    record.pid,
    record.pgid,
    record.startTicks,
    record.bootId,
    record.wrapperPid,
    record.wrapperStartTicks,
    now(),
  );
}

/** One execution, or null. */
export function getExecution(db: Database, workspaceId: string, execId: string): ExecutionRecord | null {
  return db.query(`SELECT ${COLUMNS} FROM executions WHERE workspace_id = ?1 AND exec_id = ?2`).get(workspaceId, execId) as ExecutionRecord | null;
}

/** Executions of a workspace not yet known to be finished (they may still have died). */
export function unfinishedExecutions(db: Database, workspaceId?: string): ExecutionRecord[] {
  if (workspaceId === undefined) {
    return db.query(`SELECT ${COLUMNS} FROM executions WHERE finished_at IS NULL ORDER BY started_at`).all() as ExecutionRecord[];
  }
  return db
    .query(`SELECT ${COLUMNS} FROM executions WHERE workspace_id = ?1 AND finished_at IS NULL ORDER BY started_at`)
    .all(workspaceId) as ExecutionRecord[];
}

/** Marks an execution finished; keeps the first recorded outcome. */
export function markFinished(db: Database, workspaceId: string, execId: string, exit?: { code: number | null; signal: string | null }): void {
  db.query(
    `UPDATE executions SET finished_at = ?3, exit_code = ?4, exit_signal = ?5
     WHERE workspace_id = ?1 AND exec_id = ?2 AND finished_at IS NULL`,
  ).run(workspaceId, execId, now(), exit?.code ?? null, exit?.signal ?? null);
}

/** Removes every execution record of a workspace (destroy). */
export function deleteExecutions(db: Database, workspaceId: string): void {
  db.query("DELETE FROM executions WHERE workspace_id = ?1").run(workspaceId);
}
