/**
 * Why an operation may not use a workspace: one error class per reason, each with the one text
 * the daemon sees, and requireWorkspace(), which finds the first reason that applies. Callers
 * tell refusals apart by class (inspect answers a missing one `missing`), never by their words.
 * Ownership keeps its rule in owner.ts; isolation, its rule and its refusal (LessIsolation) in
 * isolation.ts.
 */
import type { Database } from "bun:sqlite";
import { countsAsMissing, getWorkspace, type WorkspaceRecord } from "../store/workspaces.ts";
import { liveHolder } from "./holder.ts";
import { ownershipMismatch, type Ownership } from "./owner.ts";

/** A workspace an operation may not use; the subclass says why. */
export class WorkspaceRefused extends Error {
  constructor(
    readonly workspaceId: string,
    message: string,
  ) {
    super(message);
  }
}

/** No such workspace, or its create has not finished (store/workspaces.ts countsAsMissing). */
export class WorkspaceMissing extends WorkspaceRefused {
  constructor(workspaceId: string) {
    super(workspaceId, `workspace ${JSON.stringify(workspaceId)} does not exist`);
  }
}

/** Paused: nothing runs in it until resume. */
export class WorkspacePaused extends WorkspaceRefused {
  constructor(workspaceId: string) {
    super(workspaceId, `workspace ${JSON.stringify(workspaceId)} is paused`);
  }
}

/** A destroy has not finished: inspect answers `error` with these words; everything but destroy refuses with them. */
export class BeingDestroyed extends WorkspaceRefused {}

/** Its destroy is running, in the live process `pid`. */
export class WorkspaceBusy extends BeingDestroyed {
  constructor(
    workspaceId: string,
    readonly pid: number,
  ) {
    super(workspaceId, `workspace ${JSON.stringify(workspaceId)} is being destroyed (pid ${pid}); nothing else may use it`);
  }
}

/** Its destroy stopped (`why`) or died before it removed everything: only a destroy may use it. */
export class DestroyUnfinished extends BeingDestroyed {
  constructor(workspaceId: string, why: string) {
    super(workspaceId, `workspace ${JSON.stringify(workspaceId)} is not fully destroyed: ${why}; destroy it again to finish (what is left stays the workspace's until then)`);
  }
}

/** Another owner's, or another runtime instance's (owner.ts). */
export class OtherOwner extends WorkspaceRefused {}

/** Created in the other protocol dialect (owner.ts). */
export class OtherDialect extends WorkspaceRefused {}

/**
 * Why a workspace whose destroy has not finished may not be used, or null when no destroy is
 * under way: one still running (its live holder), or one that stopped (the reason it recorded,
 * or its process died).
 */
export function destroyRefusal(record: WorkspaceRecord): BeingDestroyed | null {
  if (record.status !== "destroying") return null;
  const holder = liveHolder(record);
  if (holder) return new WorkspaceBusy(record.workspaceId, holder.pid);
  return new DestroyUnfinished(record.workspaceId, record.destroyProblem ?? `its destroy was interrupted (pid ${record.lock?.pid ?? "?"} is gone)`);
}

/** Why `who` may not operate on the recorded workspace (nothing has changed), or null. */
function ownershipRefusal(record: WorkspaceRecord, who: Ownership): OtherOwner | OtherDialect | null {
  const mismatch = ownershipMismatch(record, who);
  if (mismatch === null) return null;
  const message = `${mismatch.problem}; nothing was changed`;
  return mismatch.part === "dialect" ? new OtherDialect(record.workspaceId, message) : new OtherOwner(record.workspaceId, message);
}

/** Throws unless `who` may operate on the recorded workspace; nothing has changed when it throws. */
export function requireOwner(record: WorkspaceRecord, who: Ownership): void {
  const refusal = ownershipRefusal(record, who);
  if (refusal) throw refusal;
}

/** What an operation needs of a workspace beyond existing, being `who`'s and no destroy under way. */
export interface Needs {
  /** Not paused (exec). */
  ready?: boolean;
}

/**
 * The first reason `record` (null: no row) may not be used by `who`, or null when it may. In
 * this order: no row, ownership, a create not finished, a destroy under way, paused.
 */
export function refusalOf(record: WorkspaceRecord | null, workspaceId: string, who: Ownership, needs: Needs = {}): WorkspaceRefused | null {
  if (!record) return new WorkspaceMissing(workspaceId);
  const refusal = ownershipRefusal(record, who) ?? (countsAsMissing(record.status) ? new WorkspaceMissing(workspaceId) : destroyRefusal(record));
  if (refusal) return refusal;
  return needs.ready && record.status === "paused" ? new WorkspacePaused(workspaceId) : null;
}

/** `record` (null: no row) when `who` may use it; else throws the refusal that says why not (refusalOf). */
export function checkWorkspace(record: WorkspaceRecord | null, workspaceId: string, who: Ownership, needs: Needs = {}): WorkspaceRecord {
  const refusal = refusalOf(record, workspaceId, who, needs);
  if (refusal) throw refusal;
  return record!;
}

/** The workspace's record, or the refusal that says why `who` may not use it (refusalOf). One primary-key lookup. */
export function requireWorkspace(db: Database, workspaceId: string, who: Ownership, needs: Needs = {}): WorkspaceRecord {
  return checkWorkspace(getWorkspace(db, workspaceId), workspaceId, who, needs);
}
