/**
 * One process at a time runs a long operation (create, pause, resume, destroy) on a workspace.
 * The lock is the holder's identity on the workspace row, taken in a BEGIN IMMEDIATE
 * transaction. A holder killed while holding it is detected by identity (boot, pid, start
 * time) and whoever comes next takes over, first killing the git process it left behind.
 */
import type { Database } from "bun:sqlite";
import { stopWorkload } from "../containment/group-scope.ts";
import { diagnose } from "../output.ts";
import { isSameProcess, isSelf, selfIdentity } from "../platform/process.ts";
import { deleteRepoLock, getRepoLock, getWorkspace, setRepoLock, updateWorkspace, type WorkspaceRecord } from "../store/workspaces.ts";
import { writeTransaction } from "../store/db.ts";
import type { ChildTracker } from "./git.ts";
import { liveHolder } from "./holder.ts";
import type { Ownership } from "./owner.ts";
import { checkWorkspace } from "./refusals.ts";

/** What one attempt decided: wait for a live holder, or a result. */
type Attempt<T> = { wait: WorkspaceRecord } | { done: T };

/**
 * Runs `attempt` in a BEGIN IMMEDIATE transaction, again and again while it asks to wait for
 * a live holder. No timeout: a live holder is making progress or hung on git, and the lock
 * frees itself the moment that process dies. Says once on stderr who it is waiting for.
 */
export async function untilFree<T>(db: Database, workspaceId: string, attempt: (record: WorkspaceRecord | null) => Attempt<T>): Promise<T> {
  const started = performance.now();
  let pause = 5;
  let told = false;
  for (;;) {
    const outcome = writeTransaction(db, () => attempt(getWorkspace(db, workspaceId)));
    if ("done" in outcome) return outcome.done;
    if (!told && performance.now() - started > 2000) {
      const holder = outcome.wait;
      diagnose(`waiting for pid ${holder.lock?.pid} (${holder.lockOp ?? "?"}) to finish with workspace ${JSON.stringify(workspaceId)}`);
      told = true;
    }
    // Jitter spreads many waiters (50 parallel creates) over time instead of in lockstep.
    await Bun.sleep(pause + Math.random() * pause);
    pause = Math.min(pause * 2, 100);
  }
}

/**
 * Takes the lock of a ready or paused workspace for `op`, waiting while a live process holds
 * it, and sets `status` in the same transaction when given. Refuses (refusals.ts) a workspace
 * that is missing or still being created, another's, or being destroyed. Returns the record
 * as it was before the claim.
 */
export async function claimExisting(db: Database, workspaceId: string, owner: Ownership, op: string, status?: "ready" | "paused"): Promise<WorkspaceRecord> {
  return await untilFree<WorkspaceRecord>(db, workspaceId, (record) => {
    const existing = checkWorkspace(record, workspaceId, owner);
    if (liveHolder(existing)) return { wait: existing };
    updateWorkspace(db, workspaceId, { lock: { holder: selfIdentity(), op }, ...(status ? { status } : {}) });
    return { done: existing };
  });
}

/** Takes the lock of an existing row for this process (inside the caller's transaction). */
export function takeLock(db: Database, workspaceId: string, op: string): void {
  updateWorkspace(db, workspaceId, { lock: { holder: selfIdentity(), op } });
}

/** Releases the lock if this process still holds it. */
export function releaseLock(db: Database, workspaceId: string): void {
  writeTransaction(db, () => {
    const record = getWorkspace(db, workspaceId);
    if (record?.lock && isSelf(record.lock)) updateWorkspace(db, workspaceId, { lock: null, child: null });
  });
}

/**
 * Kills the git process a dead holder left running (its whole session), waits until it is
 * gone, and forgets it. `previous` is the record as it was before the takeover.
 */
export async function reapOrphanChild(db: Database, previous: WorkspaceRecord): Promise<void> {
  if (!previous.child || !previous.lock) return;
  await stopWorkload(previous.child, 0);
  writeTransaction(db, () => updateWorkspace(db, previous.workspaceId, { child: null }));
}

/** Records the git process this holder waits for on the workspace row, and forgets it after. */
export function childTracker(db: Database, workspaceId: string): ChildTracker {
  return {
    started: (child) => void writeTransaction(db, () => updateWorkspace(db, workspaceId, { child })),
    finished: () => void writeTransaction(db, () => updateWorkspace(db, workspaceId, { child: null })),
  };
}

/** Runs `fn` holding a repository's worktree lock. */
export type RepoGuard = <T>(commonDir: string, fn: () => Promise<T>) => Promise<T>;

/**
 * Serializes worktree changes per repository among the processes of this home: git's own
 * `worktree add` is not safe against a concurrent one in the same repository (one reads the
 * other's half-made `.git/worktrees/<name>` and dies). A dead holder is taken over.
 */
export function repoGuard(db: Database): RepoGuard {
  return async (commonDir, fn) => {
    const me = selfIdentity();
    let pause = 2;
    while (
      !writeTransaction(db, () => {
        const holder = getRepoLock(db, commonDir);
        if (holder && !isSelf(holder) && isSameProcess(holder)) return false;
        setRepoLock(db, commonDir, me);
        return true;
      })
    ) {
      await Bun.sleep(pause + Math.random() * pause);
      pause = Math.min(pause * 2, 50);
    }
    try {
      return await fn();
    } finally {
      writeTransaction(db, () => deleteRepoLock(db, commonDir, me));
    }
  };
}
