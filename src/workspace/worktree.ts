/**
 * Worktrees of the user's repository kept in owned storage: adding one, re-adding one whose
 * directory vanished, and removing exactly ours (never another worktree's bookkeeping).
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { PATH_MISSING, tolerating } from "../platform/errno.ts";
import { lstatOrNull } from "../platform/lookup.ts";
import { dirname, join, resolve } from "node:path";
import { diagnose } from "../output.ts";
import type { WorkspaceDetails } from "../store/workspaces.ts";
import { LOCAL_GIT, type GitSettings } from "./git-environment.ts";
import { gitRun, type ChildTracker } from "./git.ts";
import type { RepoGuard } from "./lock.ts";
import { resolveCommit } from "./repo.ts";
import { removeOwnedTree } from "./owned-tree.ts";

/** `git worktree add` of `checkout` in `repo`: a new branch at `base`, or an existing ref. */
export async function addWorktree(
  repo: string,
  checkout: string,
  what: { newBranch: string; base: string } | { ref: string } | { detach: string },
  tracker: ChildTracker,
  settings: GitSettings = LOCAL_GIT,
): Promise<void> {
  const args = ["worktree", "add"];
  if ("newBranch" in what) args.push("-b", what.newBranch, checkout, what.base);
  else if ("ref" in what) args.push(checkout, what.ref);
  else args.push("--detach", checkout, what.detach);
  await gitRun(repo, args, tracker, settings);
}

/**
 * Re-adds a worktree whose directory was removed behind our back (resume): on its branch, or
 * detached at its recorded commit. Our stale registration goes first so git accepts the path.
 */
export async function readdWorktree(details: WorkspaceDetails, tracker: ChildTracker, guard: RepoGuard): Promise<void> {
  const { repo, checkout, commonDir, branch, head } = details;
  if (!repo || !checkout || !commonDir) throw new Error("the workspace record lacks its worktree details");
  if (!existsSync(repo)) throw new Error(`its repository ${repo} no longer exists, so its worktree cannot be re-added`);
  await guard(commonDir, async () => {
    forgetRegistration(commonDir, checkout);
    if (branch) return await addWorktree(repo, checkout, { ref: branch }, tracker);
    if (!head || !resolveCommit(repo, head)) throw new Error(`its commit ${head ?? "(unknown)"} is no longer in ${repo}`);
    await addWorktree(repo, checkout, { detach: head }, tracker);
  });
}

/**
 * Removes our worktree: its directory, by our own removal (git's own descends into whatever is
 * mounted inside; ours never leaves the filesystem, remove.ts), then its registration. Unlike
 * `git worktree prune`, this never touches the registration of anyone else's worktree.
 * `notOurs` (confinement.ts worktreeProblem) says the checkout is no longer provably ours: it
 * is said, and only the directory entry goes (a symlink is unlinked, never followed).
 */
export async function removeWorktree(details: WorkspaceDetails, guard: RepoGuard, notOurs: string | null): Promise<void> {
  const { checkout, commonDir } = details;
  if (!checkout || !commonDir || !registrationOf(commonDir, checkout)) return;
  if (notOurs) diagnose(`not letting git remove ${checkout}: ${notOurs}; removing only our registration and the directory entry, following no symlink`);
  await guard(commonDir, async () => {
    if (inDirectory(checkout)) removeOwnedTree(checkout);
    forgetRegistration(commonDir, checkout);
  });
}

/**
 * Whether `path`'s parent is a directory. A workload may put a symlink where the checkout's
 * storage directory was: nothing of ours is reachable through it, and the storage's own removal
 * (remove.ts) unlinks the link; trying to remove through it would fail every destroy forever.
 */
function inDirectory(path: string): boolean {
  return lstatOrNull(dirname(path))?.isDirectory() ?? false;
}

/** Deletes `<commonDir>/worktrees/<name>` of the worktree at `checkout`, if registered. */
function forgetRegistration(commonDir: string, checkout: string): void {
  const entry = registrationOf(commonDir, checkout);
  if (entry) removeOwnedTree(entry);
}

/** The registration directory whose `gitdir` points at `checkout`, or null. */
function registrationOf(commonDir: string, checkout: string): string | null {
  const dir = join(commonDir, "worktrees");
  const names = tolerating(PATH_MISSING, null, () => readdirSync(dir));
  if (names === null) return null;
  const expected = join(checkout, ".git");
  for (const name of names) {
    // A registration without its gitdir file (being made or removed by git) points nowhere.
    const gitdir = tolerating(PATH_MISSING, null, () => readFileSync(join(dir, name, "gitdir"), "utf8").trim());
    if (gitdir !== null && resolve(dir, name, gitdir) === expected) return join(dir, name);
  }
  return null;
}
