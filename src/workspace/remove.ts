/**
 * Removing what a workspace owns: its storage directory under the runtime home and its
 * worktree registration. An adopted directory is never deleted. Undoing a failed or abandoned
 * create also reverts the branch it made and the paseo.json it seeded, when still untouched.
 */
import { existsSync, readFileSync, rmSync, unlinkSync } from "node:fs";
import { PATH_MISSING, tolerating } from "../platform/errno.ts";
import { join } from "node:path";
import { diagnose } from "../output.ts";
import type { WorkspaceRecord } from "../store/workspaces.ts";
import { gitRead } from "./git.ts";
import type { RepoGuard } from "./lock.ts";
import { isInside, storageDir, workspacesDir } from "./paths.ts";
import { branchCommit, deleteScratchRef } from "./repo.ts";
import { worktreeProblem } from "./confinement.ts";
import { removeWorktree } from "./worktree.ts";
import { removeOwnedTree } from "./owned-tree.ts";

/**
 * What a workspace holds beyond its storage that must be released before the storage goes:
 * found before the checkout is removed, released after it (the sandbox's private git dir,
 * sandbox/git/sandbox-git.ts heldGitOf). The operation passes it in, so that this file, below the
 * sandbox room, does not reach up into it.
 */
export type HeldBeforeRemoval = (home: string, record: WorkspaceRecord) => { release(): void } | null;

/** Removes everything `record` owns on disk; with `undo`, also reverts a create's changes to the user's files. */
export async function removeOwned(
  home: string,
  record: WorkspaceRecord,
  options: { undo: boolean; guard: RepoGuard; staleLocks?: boolean; held: HeldBeforeRemoval },
): Promise<void> {
  const storage = storageDir(home, record.workspaceId);
  const { checkout } = record.details;
  // The record is trusted only for paths inside this workspace's own storage.
  if (checkout !== undefined && !isInside(storage, checkout)) throw new Error(`refusing to remove ${checkout}: outside ${storage}`);
  if (options.staleLocks) removeStaleRefLocks(record);
  const held = options.held(home, record);
  await removeWorktree(record.details, options.guard, worktreeProblem(record));
  held?.release();
  removeStorage(home, storage);
  removeScratchRef(record);
  if (options.undo) {
    revertBranch(record);
    removeSeeded(record);
  }
}

/** Deletes a workspace's storage directory (only ever under `<home>/workspaces`), on its filesystem only. */
function removeStorage(home: string, path: string): void {
  if (!isInside(workspacesDir(home), path)) throw new Error(`refusing to remove ${path}: outside ${workspacesDir(home)}`);
  removeOwnedTree(path);
}

/**
 * A git killed while creating our branch or scratch ref leaves `<ref>.lock` behind, and every
 * later git refuses that ref. Called only when recovering a create whose git child was
 * killed: the locks named after refs only that create was making are ours and stale.
 */
function removeStaleRefLocks(record: WorkspaceRecord): void {
  const { commonDir, branchChange, scratchRef } = record.details;
  if (!commonDir) return;
  const refs = [branchChange && `refs/heads/${branchChange.name}`, scratchRef?.startsWith("refs/paseo-host-runtime/") && scratchRef];
  for (const ref of refs) {
    if (!ref) continue;
    const lock = join(commonDir, `${ref}.lock`);
    if (isInside(join(commonDir, "refs"), lock)) rmSync(lock, { force: true });
  }
}

/** Deletes the ref a change-request fetch left in our own namespace of the user's repository. */
function removeScratchRef(record: WorkspaceRecord): void {
  const { repo, scratchRef } = record.details;
  if (repo && scratchRef?.startsWith("refs/paseo-host-runtime/") && existsSync(repo)) deleteScratchRef(repo, scratchRef);
}

/** Deletes (or moves back) the branch a create made or moved, if nobody moved it since. */
function revertBranch(record: WorkspaceRecord): void {
  const { repo, branchChange } = record.details;
  if (!repo || !branchChange?.after || !existsSync(repo)) return;
  const ref = `refs/heads/${branchChange.name}`;
  if (branchCommit(repo, branchChange.name) !== branchChange.after) return;
  try {
    if (branchChange.before === null) gitRead(repo, ["update-ref", "-d", ref, branchChange.after]);
    else gitRead(repo, ["update-ref", ref, branchChange.before, branchChange.after]);
  } catch (error) {
    diagnose(`could not revert branch ${branchChange.name} in ${repo}: ${(error as Error).message}`);
  }
}

/** Deletes a paseo.json the create seeded into an adopted directory, if it is still the seeded content. */
function removeSeeded(record: WorkspaceRecord): void {
  const seeded = record.details.seeded;
  if (!seeded || record.kind !== "adopted") return;
  // Either file is gone: nothing of ours is left to remove.
  tolerating(PATH_MISSING, undefined, () => {
    if (readFileSync(seeded.into).equals(readFileSync(seeded.from))) unlinkSync(seeded.into);
  });
}
