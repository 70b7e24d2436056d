/**
 * Worktrees of the user's repository kept in owned storage: adding one, re-adding one whose
 * directory vanished, and removing exactly ours (never another worktree's bookkeeping).
 */
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { diagnose } from "../output.ts";
import type { WorkspaceDetails } from "../store/workspaces.ts";
import { LOCAL_GIT, type GitSettings } from "./git-environment.ts";
import { GitError, gitRun, type ChildTracker } from "./git.ts";
import type { RepoGuard } from "./lock.ts";
import { resolveCommit } from "./repo.ts";

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
 * Removes our worktree: `git worktree remove --force --force` while git knows it, then drops
 * our registration if git left it (repository moved, worktree half-made). Unlike
 * `git worktree prune`, this never touches the registration of anyone else's worktree.
 * `notOurs` (confinement.ts worktreeProblem) keeps git away from a checkout that is no longer
 * provably ours: only our registration goes, and the caller removes the directory entry.
 */
export async function removeWorktree(details: WorkspaceDetails, tracker: ChildTracker, guard: RepoGuard, notOurs: string | null): Promise<void> {
  const { repo, checkout, commonDir } = details;
  if (!checkout || !commonDir || !registrationOf(commonDir, checkout)) return;
  if (notOurs) diagnose(`not letting git remove ${checkout}: ${notOurs}; removing only our registration and the directory entry, following no symlink`);
  await guard(commonDir, async () => {
    if (repo && existsSync(repo) && !notOurs) {
      try {
        await gitRun(repo, ["worktree", "remove", "--force", "--force", checkout], tracker);
      } catch (error) {
        if (!(error instanceof GitError)) throw error;
        diagnose(`${error.message}; removing the directory and its registration directly`);
      }
    }
    forgetRegistration(commonDir, checkout);
  });
}

/** Deletes `<commonDir>/worktrees/<name>` of the worktree at `checkout`, if registered. */
function forgetRegistration(commonDir: string, checkout: string): void {
  const entry = registrationOf(commonDir, checkout);
  if (entry) rmSync(entry, { recursive: true, force: true });
}

/** The registration directory whose `gitdir` points at `checkout`, or null. */
function registrationOf(commonDir: string, checkout: string): string | null {
  const dir = join(commonDir, "worktrees");
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return null;
  }
  const expected = join(checkout, ".git");
  for (const name of names) {
    let gitdir: string;
    try {
      gitdir = readFileSync(join(dir, name, "gitdir"), "utf8").trim();
    } catch {
      continue;
    }
    if (resolve(dir, name, gitdir) === expected) return join(dir, name);
  }
  return null;
}
