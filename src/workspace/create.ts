/**
 * The durable side of create: claiming the id (one creator at a time, dead creators taken
 * over), recording intent, finishing, and undoing exactly what a failed create made.
 */
import type { Database } from "bun:sqlite";
import { removeWorkspaceCgroup } from "../containment/cgroup-scope.ts";
import { endWorkspaceExecutions } from "../containment/executions.ts";
import { diagnose } from "../output.ts";
import { selfIdentity } from "../platform/process.ts";
import { madeBranch, recordMadeBranch } from "../store/branches.ts";
import { deleteExecutions } from "../store/executions.ts";
import { deleteWorkspace, getWorkspace, insertCreating, updateWorkspace, type MaterializationKind, type WorkspaceRecord } from "../store/workspaces.ts";
import type { Built } from "./materialize.ts";
import { captureConfinement, RootProblem } from "./confinement.ts";
import { createConflict, type KeptInput } from "./input.ts";
import { liveHolder } from "./holder.ts";
import { repoGuard, reapOrphanChild, releaseLock, takeLock, untilFree } from "./lock.ts";
import { writeTransaction } from "../store/db.ts";
import type { Ownership } from "./owner.ts";
import { destroyRefusal, requireOwner } from "./refusals.ts";
import { removeOwned, type HeldBeforeRemoval } from "./remove.ts";

/** The isolation a workspace records (the sandbox room's settings, as the store keeps them). */
type Isolation = NonNullable<WorkspaceRecord["isolation"]>;

/** A create either answers an existing workspace or holds the lock on a fresh `creating` record. */
type CreateClaim = { existing: WorkspaceRecord } | { existing: null; abandoned: WorkspaceRecord | null };

/**
 * Claims `input.workspaceId` for creation. An existing workspace with the same input is the
 * answer (idempotence); with another input it is a conflict. A create or destroy still running
 * is waited for; a create whose process died is taken over (`abandoned`, to be recovered); a
 * destroy that stopped is refused with its reason: only a destroy finishes it.
 */
export async function claimCreate(db: Database, kept: KeptInput, owner: Ownership, hostDirectory: "adopt" | "clone", isolation: Isolation): Promise<CreateClaim> {
  const { input, inputDigest } = kept;
  const workspaceId = input.workspaceId;
  return await untilFree<CreateClaim>(db, workspaceId, (record) => {
    if (!record) {
      insertCreating(db, { workspaceId, ...owner, input, inputDigest, hostDirectory, isolation, holder: selfIdentity(), op: "create" });
      return { done: { existing: null, abandoned: null } };
    }
    requireOwner(record, owner);
    if (record.status === "destroying" && !liveHolder(record)) throw destroyRefusal(record)!;
    if (record.status === "ready" || record.status === "paused") {
      const conflict = createConflict(record, { input, inputDigest, hostDirectory });
      if (conflict) {
        throw new Error(`workspace ${JSON.stringify(workspaceId)} already exists with a different create input: ${conflict}; destroy it first or use another workspace id`);
      }
      return { done: { existing: record } };
    }
    if (liveHolder(record)) return { wait: record };
    takeLock(db, workspaceId, "create");
    return { done: { existing: null, abandoned: record } };
  });
}

/**
 * Cleans up after a create that died midway: kills the git it left running, stops any
 * execution, removes its storage (undoing its branch and seed), then makes the record a fresh
 * `creating` record for the kept input.
 */
export async function recoverAbandoned(db: Database, home: string, previous: WorkspaceRecord, kept: KeptInput, hostDirectory: "adopt" | "clone", isolation: Isolation, held: HeldBeforeRemoval): Promise<void> {
  const workspaceId = previous.workspaceId;
  diagnose(`workspace ${JSON.stringify(workspaceId)}: cleaning up after an interrupted ${previous.lockOp ?? previous.status} (pid ${previous.lock?.pid ?? "?"})`);
  await reapOrphanChild(db, previous);
  await endWorkspaceExecutions(db, workspaceId, previous.cgroup);
  await removeOwned(home, previous, { undo: true, guard: repoGuard(db), staleLocks: true, held });
  writeTransaction(db, () => {
    deleteExecutions(db, workspaceId);
    updateWorkspace(db, workspaceId, { status: "creating", input: kept.input, inputDigest: kept.inputDigest, hostDirectory, isolation, kind: null, root: null, details: {}, cgroup: null });
  });
}

/** Whether a create that built `kind` made fresh content (a clone, copy or worktree), as opposed to adopting a directory in place. */
export function madeFreshContent(kind: MaterializationKind): boolean {
  return kind !== "adopted";
}

/** Durably records what materialization is about to make. */
export function noteIntent(db: Database, workspaceId: string): (kind: WorkspaceRecord["kind"], details: WorkspaceRecord["details"]) => void {
  return (kind, details) => writeTransaction(db, () => void updateWorkspace(db, workspaceId, { kind, details }));
}

/**
 * Records the identity of what was made (confinement.ts), marks the workspace ready and
 * releases the lock; returns the final record.
 */
export function finishCreate(db: Database, workspaceId: string, built: Built): WorkspaceRecord {
  let confinement;
  try {
    confinement = captureConfinement(built);
  } catch (error) {
    if (error instanceof RootProblem) throw new Error(`the workspace just made cannot be confined: ${error.message}`);
    throw error;
  }
  return writeTransaction(db, () => {
    updateWorkspace(db, workspaceId, { status: "ready", kind: built.kind, root: built.root, details: built.details, confinement, lock: null, child: null });
    const record = getWorkspace(db, workspaceId)!;
    const { commonDir, branchChange } = built.details;
    // A branch it made (not one it found or moved) stays this workspace id's after destroy.
    if (commonDir && branchChange?.before === null && branchChange.after) {
      recordMadeBranch(db, { commonDir, branch: branchChange.name, workspaceId, owner: record.owner, baseCommit: branchChange.after });
    }
    return record;
  });
}

/**
 * For materialize: the commit branch `branch` of the repository at `commonDir` was made at, when
 * an earlier create of this same workspace id and owner made it; else null.
 */
export function branchMadeFor(db: Database, workspaceId: string, owner: Ownership): (commonDir: string, branch: string) => string | null {
  return (commonDir, branch) => {
    const made = madeBranch(db, commonDir, branch);
    return made && made.workspaceId === workspaceId && made.owner === owner.owner ? made.baseCommit : null;
  };
}

/**
 * Undoes a create that failed: removes what it made, then its record. If even that fails, the
 * record stays `creating` with the lock released, and the next create or destroy retries.
 */
export async function undoCreate(db: Database, home: string, workspaceId: string, held: HeldBeforeRemoval): Promise<void> {
  const record = getWorkspace(db, workspaceId);
  if (!record) return;
  try {
    await removeOwned(home, record, { undo: true, guard: repoGuard(db), held });
    if (record.cgroup) removeWorkspaceCgroup(record.cgroup);
    writeTransaction(db, () => {
      deleteExecutions(db, workspaceId);
      deleteWorkspace(db, workspaceId);
    });
  } catch (error) {
    releaseLock(db, workspaceId);
    diagnose(`cleaning up after the failed create also failed (the next create or destroy retries): ${(error as Error).message}`);
  }
}
