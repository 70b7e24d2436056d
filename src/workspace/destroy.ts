/** Destroying a workspace: shared by `destroy` and `reconcile`. */
import type { Database } from "bun:sqlite";
import { endWorkspaceExecutions } from "../containment/executions.ts";
import { deleteExecutions, deleteOrphanRecords } from "../store/executions.ts";
import { deleteWorkspace, getWorkspace, updateWorkspace, type WorkspaceRecord } from "../store/workspaces.ts";
import { liveHolder } from "./holder.ts";
import { repoGuard, reapOrphanChild, releaseLock, takeLock, untilFree } from "./lock.ts";
import { writeTransaction } from "../store/db.ts";
import type { Ownership } from "./owner.ts";
import { destroyRefusal, requireOwner } from "./refusals.ts";
import { removeOwned, type HeldBeforeRemoval } from "./remove.ts";
import { logLine } from "../log/runtime-log.ts";
import { diagnose } from "../output.ts";
import { existsSync } from "node:fs";
import { keptBranchAt } from "../store/branches.ts";
import { branchCommit } from "./repo.ts";

/**
 * Destroys `workspaceId` if it exists (idempotent): waits for a live operation on it to end,
 * records the intent (`destroying`), SIGKILLs every live execution and waits until they are
 * gone, removes its cgroups and the owned storage (never an adopted directory), then forgets
 * the records.
 * A create that died midway is undone completely, including the branch it made.
 * A destroy that cannot finish (a mount point inside, an immutable file, a full disk) records
 * why and leaves the workspace `destroying`: inspect says so, everything but destroy refuses
 * it, and the next destroy resumes where this one stopped. It throws saying exactly that.
 * Returns false when there was nothing to destroy.
 */
export async function destroyWorkspace(db: Database, home: string, workspaceId: string, owner: Ownership, held: HeldBeforeRemoval): Promise<boolean> {
  const previous = await untilFree<WorkspaceRecord | null>(db, workspaceId, (record) => {
    if (!record) return { done: null };
    requireOwner(record, owner);
    if (liveHolder(record)) return { wait: record };
    takeLock(db, workspaceId, "destroy");
    // A create that never finished stays one to undo, however many destroys it takes.
    const details = undoesCreate(record) ? { ...record.details, abandonedCreate: true } : record.details;
    updateWorkspace(db, workspaceId, { status: "destroying", destroyProblem: null, details });
    return { done: record };
  });
  if (!previous) {
    // Nothing to destroy; exec ids refused while no such workspace existed are forgotten.
    writeTransaction(db, () => deleteOrphanRecords(db, workspaceId));
    return false;
  }
  let kept: KeptBranch | null;
  try {
    await removeEverything(db, home, previous, held);
    kept = keptBranch(previous);
  } catch (error) {
    throw new Error(recordUnfinished(db, workspaceId, error as Error));
  }
  writeTransaction(db, () => {
    if (kept) keptBranchAt(db, kept, kept.commit);
    deleteExecutions(db, workspaceId);
    deleteWorkspace(db, workspaceId);
  });
  // For reconcile above all: which workspaces it removed is what an operator asks afterwards.
  logLine("info", "removed", { workspaceId, status: previous.status, kind: previous.kind, root: previous.root });
  return true;
}

/** Everything but the records: executions, the git left running, cgroups, owned storage. */
async function removeEverything(db: Database, home: string, previous: WorkspaceRecord, held: HeldBeforeRemoval): Promise<void> {
  await reapOrphanChild(db, previous);
  await endWorkspaceExecutions(db, previous.workspaceId, previous.cgroup);
  const undo = undoesCreate(previous);
  await removeOwned(home, previous, { undo, staleLocks: undo, guard: repoGuard(db), held });
}

type KeptBranch = { commonDir: string; branch: string; workspaceId: string; commit: string };

/**
 * The branch the workspace's worktree was on, where destroy keeps it (it holds the agent's
 * commits): recorded so that a later create of the same id takes only a branch that still
 * descends from these commits for the one it made (store/branches.ts). None for an undone create.
 */
function keptBranch(record: WorkspaceRecord): KeptBranch | null {
  const { repo, commonDir, branch, branchChange } = record.details;
  const name = branchChange?.name ?? branch;
  if (record.kind !== "worktree" || undoesCreate(record) || !repo || !commonDir || !name || !existsSync(repo)) return null;
  const commit = branchCommit(repo, name);
  return commit === null ? null : { commonDir, branch: name, workspaceId: record.workspaceId, commit };
}

/** A record still `creating` here belongs to a create that died (live ones are waited for). */
function undoesCreate(record: WorkspaceRecord): boolean {
  return record.status === "creating" || record.details.abandonedCreate === true;
}

/**
 * Records why the destroy stopped and releases the lock; returns what every later operation
 * will say (refusals.ts destroyRefusal). A store that refuses even this keeps our dead lock,
 * which says "interrupted" just as well.
 */
function recordUnfinished(db: Database, workspaceId: string, error: Error): string {
  try {
    writeTransaction(db, () => updateWorkspace(db, workspaceId, { destroyProblem: error.message }));
    releaseLock(db, workspaceId);
    const record = getWorkspace(db, workspaceId);
    const message = (record && destroyRefusal(record)?.message) ?? error.message;
    logLine("warn", "destroy-unfinished", { workspaceId, message: error.message });
    return message;
  } catch (recording) {
    diagnose(`cannot record why the destroy of workspace ${JSON.stringify(workspaceId)} stopped: ${(recording as Error).message}`);
    return `workspace ${JSON.stringify(workspaceId)} is not fully destroyed: ${error.message}; destroy it again to finish`;
  }
}
