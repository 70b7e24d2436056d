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
  /** The execution's cgroup directory (cgroup containment), or null (process-group containment). */
  cgroup: string | null;
}

const FIELDS: [column: string, name: keyof ExecutionRecord][] = [
  ["workspace_id", "workspaceId"],
  ["exec_id", "execId"],
  ["mode", "mode"],
  ["purpose", "purpose"],
  ["argv0", "argv0"],
  ["pid", "pid"],
  ["pgid", "pgid"],
  ["start_ticks", "startTicks"],
  ["boot_id", "bootId"],
  ["wrapper_pid", "wrapperPid"],
  ["wrapper_start_ticks", "wrapperStartTicks"],
  ["started_at", "startedAt"],
  ["finished_at", "finishedAt"],
  ["exit_code", "exitCode"],
  ["exit_signal", "exitSignal"],
  ["cgroup", "cgroup"],
];

/** The select list of an ExecutionRecord, optionally qualified by a table alias. */
function columns(table = ""): string {
  return FIELDS.map(([column, name]) => `${table}${column} AS ${name}`).join(", ");
}

const COLUMNS = columns();

/** What the wrapper knows about itself and the request before launch. */
export interface Reservation {
  workspaceId: string;
  execId: string;
  mode: "pipes" | "pty";
  purpose: string;
  argv0: string;
  bootId: string;
  wrapperPid: number;
  wrapperStartTicks: number;
  /** Where the workload will run (cgroup containment): recorded before the cgroup is made. */
  cgroup?: string | null;
}

/**
 * Claims an execution identity before anything is launched (pid 0 = not launched yet).
 * Throws when the identity was ever used in this workspace: identities are never reused.
 */
export function reserveExecution(db: Database, r: Reservation): void {
  const used = db.query("SELECT 1 FROM executions WHERE workspace_id = ?1 AND exec_id = ?2").get(r.workspaceId, r.execId);
  if (used) throw new Error(`execution identity ${JSON.stringify(r.execId)} was already used in workspace ${JSON.stringify(r.workspaceId)}; identities are never reused`);
  db.query(
    `INSERT INTO executions (workspace_id, exec_id, mode, purpose, argv0, pid, pgid, start_ticks, boot_id,
       wrapper_pid, wrapper_start_ticks, started_at, cgroup)
     VALUES (?1, ?2, ?3, ?4, ?5, 0, 0, 0, ?6, ?7, ?8, ?9, ?10)`,
  ).run(r.workspaceId, r.execId, r.mode, r.purpose, r.argv0, r.bootId, r.wrapperPid, r.wrapperStartTicks, now(), r.cgroup ?? null);
}

/**
 * Records an identity that was refused before anything launched, as finished at once (pid 0,
 * no outcome), so `signal` answers "already clean" for it. An identity already on record is
 * left exactly as it is (it may be another execution's: identities are never reused).
 */
export function recordRefused(db: Database, r: Reservation): void {
  db.query(
    `INSERT OR IGNORE INTO executions (workspace_id, exec_id, mode, purpose, argv0, pid, pgid, start_ticks, boot_id,
       wrapper_pid, wrapper_start_ticks, started_at, finished_at, cgroup)
     VALUES (?1, ?2, ?3, ?4, ?5, 0, 0, 0, ?6, ?7, ?8, ?9, ?9, NULL)`,
  ).run(r.workspaceId, r.execId, r.mode, r.purpose, r.argv0, r.bootId, r.wrapperPid, r.wrapperStartTicks, now());
}

/** True while a reservation may still launch: not launched yet and not finished (cancelled). */
export function mayLaunch(db: Database, workspaceId: string, execId: string): boolean {
  return db.query("SELECT 1 FROM executions WHERE workspace_id = ?1 AND exec_id = ?2 AND pid = 0 AND finished_at IS NULL").get(workspaceId, execId) !== null;
}

/**
 * Records the launched workload's identity. Returns false when the reservation was finished
 * meanwhile (a pause or destroy raced the launch): the caller must then stop the workload.
 */
export function recordLaunch(db: Database, workspaceId: string, execId: string, pid: number, pgid: number, startTicks: number): boolean {
  const result = db
    .query(
      `UPDATE executions SET pid = ?3, pgid = ?4, start_ticks = ?5, started_at = ?6
       WHERE workspace_id = ?1 AND exec_id = ?2 AND finished_at IS NULL`,
    )
    .run(workspaceId, execId, pid, pgid, startTicks, now());
  return result.changes === 1;
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

/**
 * Finishes every reservation of a workspace that has not launched yet (pid 0): their wrappers
 * then launch nothing (their launch re-checks the reservation under the write lock). Run it
 * in its own write transaction after the workspace stopped being ready.
 */
export function cancelReservations(db: Database, workspaceId: string): number {
  return db.query(`UPDATE executions SET finished_at = ?2 WHERE workspace_id = ?1 AND pid = 0 AND finished_at IS NULL`).run(workspaceId, now()).changes;
}

/** Marks an execution finished; keeps the first recorded outcome. False when it was finished already. */
export function markFinished(db: Database, workspaceId: string, execId: string, exit?: { code: number | null; signal: string | null }): boolean {
  return db.query(
    `UPDATE executions SET finished_at = ?3, exit_code = ?4, exit_signal = ?5
     WHERE workspace_id = ?1 AND exec_id = ?2 AND finished_at IS NULL`,
  ).run(workspaceId, execId, now(), exit?.code ?? null, exit?.signal ?? null).changes === 1;
}

/**
 * Removes the finished records of workspaces that do not exist (exec ids refused before any
 * such workspace existed, see recordRefused): one workspace id, or every one (reconcile).
 */
export function deleteOrphanRecords(db: Database, workspaceId?: string): number {
  const orphan = "finished_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.workspace_id = executions.workspace_id)";
  if (workspaceId === undefined) return db.query(`DELETE FROM executions WHERE ${orphan}`).run().changes;
  return db.query(`DELETE FROM executions WHERE workspace_id = ?1 AND ${orphan}`).run(workspaceId).changes;
}

/** Removes every execution record of a workspace (destroy). */
export function deleteExecutions(db: Database, workspaceId: string): void {
  db.query("DELETE FROM executions WHERE workspace_id = ?1").run(workspaceId);
}
