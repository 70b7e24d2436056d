/**
 * Which workspaces get a private git directory (private-git.ts), and when it is made: a
 * worktree or an adopted checkout of the user's repository, sandboxed, on Linux (macOS's
 * sandbox-exec cannot show one directory in place of another: there the user's git dirs are
 * only denied writes, see ../workspace-view.ts). Made at create, or at
 * the first sandboxed exec of a workspace that has none yet (one created without the sandbox,
 * or before this runtime made them), and brought up to date with the user's repository before
 * every sandboxed exec (sync-in.ts).
 */
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_GIT_TIMEOUT_MS, type RuntimeOptions } from "../../options.ts";
import { closeDescriptor } from "../../platform/directory.ts";
import { isLinux } from "../../platform/os.ts";
import { writeTransaction, type Store } from "../../store/db.ts";
import { getWorkspace, updateWorkspace, type WorkspaceRecord } from "../../store/workspaces.ts";
import { openRoot, RootProblem } from "../../workspace/confinement.ts";
import { prepareGit } from "./sync-in.ts";
import { releasePrivateGit } from "./sync-release.ts";
import type { GitSyncContext } from "./sync-state.ts";
import { isolationProblem } from "../isolation.ts";
import { requestedIsolation } from "../settings.ts";
import type { Ownership } from "../../workspace/owner.ts";
import { refusalOf } from "../../workspace/refusals.ts";
import { enclosedSubmodules, hasPrivateGit, legacyAdoptedGit, privateGitPaths, userGitOf } from "./private-git.ts";

/** A sandboxed exec's git, once prepared: the workspace's and the user's git dirs, and the submodule paths kept from the workload. */
export interface PreparedGit {
  /** Null for an adopted directory below a repository's top: nothing to sync, only the repository's submodules inside it to hold. */
  ctx: GitSyncContext | null;
  /** What `submodules` are relative to. */
  top: string;
  submodules: string[];
}

function contextOf(home: string, record: WorkspaceRecord, gitdir: string | null, timeoutMs: number): GitSyncContext | null {
  const user = userGitOf(record, gitdir);
  if (user === null) return null;
  return { workspaceId: record.workspaceId, user, paths: privateGitPaths(home, record.workspaceId), timeoutMs };
}

/** At the end of a sandboxed create: the private git dir, so the first exec finds it. */
export function makeSandboxGit(home: string, record: WorkspaceRecord, timeoutMs: number): void {
  if (!isLinux) return;
  const ctx = contextOf(home, record, record.confinement?.gitdir ?? null, timeoutMs);
  if (ctx) prepareGit(ctx, () => true);
}

/**
 * Before the transaction that launches a sandboxed exec: its workspace's private git dir, made
 * if need be and brought up to date. Null when the workspace has no checkout of the user's
 * repository, or when the launch will be refused anyway (not ready, another owner's, less
 * isolation than recorded: whileReady says why).
 */
export function gitForExec(store: Store, workspaceId: string, owner: Ownership, options: RuntimeOptions): PreparedGit | null {
  const found = getWorkspace(store.db, workspaceId);
  if (!found || refusalOf(found, workspaceId, owner, { ready: true }) !== null) return null;
  if (isolationProblem(workspaceId, found.isolation, requestedIsolation(options)) !== null) return null;
  const record = withAdoptedGitRecorded(store, found);
  const ctx = contextOf(store.home, record, worktreeGitdir(record), options.gitTimeoutMs);
  if (ctx === null && record.kind === "adopted" && record.root !== null) {
    const submodules = enclosedSubmodules(record.root);
    return submodules.length > 0 ? { ctx: null, top: record.root, submodules } : null;
  }
  // A checkout whose `.git` is gone (the user removed it) has nothing to keep: none is made in its place.
  if (ctx === null || !lstatSync(join(ctx.user.top, ".git"), { throwIfNoEntry: false })) return null;
  const submodules = prepareGit(ctx, () => getWorkspace(store.db, workspaceId)?.status === "ready");
  return { ctx, top: ctx.user.top, submodules };
}

/** An adopted record of before the runtime kept its git dirs: what its `.git` is now, recorded once (private-git.ts legacyAdoptedGit). */
function withAdoptedGitRecorded(store: Store, record: WorkspaceRecord): WorkspaceRecord {
  if (record.kind !== "adopted" || record.root === null || record.details.git !== undefined) return record;
  const details = { ...record.details, git: legacyAdoptedGit(record.root) };
  writeTransaction(store.db, () => void updateWorkspace(store.db, record.workspaceId, { details }));
  return { ...record, details };
}

/** A worktree's registration: as recorded, or (a workspace of before schema 2) as its root proves it. */
function worktreeGitdir(record: WorkspaceRecord): string | null {
  if (record.kind !== "worktree") return null;
  if (record.confinement?.gitdir) return record.confinement.gitdir;
  try {
    const root = openRoot(record);
    closeDescriptor(root.fd);
    return root.seen.gitdir;
  } catch (error) {
    if (error instanceof RootProblem) return null;
    throw error;
  }
}

/**
 * For destroy (workspace/remove.ts HeldBeforeRemoval), before anything is removed: the
 * workspace's private git dir, or null when it has none. Its release comes once the checkout is
 * gone (what fills a disk is most often the workload's build output there) and before the
 * storage goes: what the workspace committed is brought into the user's repository, the
 * namespace released, the private git dir removed, so that no sync still under way brings
 * anything back afterwards (sync-release.ts releasePrivateGit).
 */
export function heldGitOf(home: string, record: WorkspaceRecord): { release(): void } | null {
  const ctx = contextOf(home, record, worktreeGitdir(record), DEFAULT_GIT_TIMEOUT_MS);
  return ctx && hasPrivateGit(ctx.paths) ? { release: () => releasePrivateGit(ctx) } : null;
}
