/** Questions about a git repository and the few ref changes a create makes in it. */
import { lstatSync } from "node:fs";
import { join } from "node:path";
import type { WorkspaceDetails } from "../store/workspaces.ts";
import type { GitSettings } from "./git-environment.ts";
import { GitError, gitQuery, gitRead, gitRun, type ChildTracker } from "./git.ts";

/** A git object id: SHA-1 (40 hex digits) or SHA-256 (64), lowercase as git prints it. The one pattern. */
export const OBJECT_ID = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

/** Where a directory sits in its repository. */
export interface RepoInfo {
  /** Top level of the working tree holding the directory. */
  toplevel: string;
  /** The repository's common git directory (shared by all its worktrees). */
  commonDir: string;
  /** The directory relative to the top level ("" for the top level itself). */
  prefix: string;
}

/** The repository holding `dir`, or null when `dir` is not in a git working tree. */
export function repoInfo(dir: string): RepoInfo | null {
  let lines: string[];
  try {
    lines = gitRead(dir, ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", "--show-prefix"]).split("\n");
  } catch (error) {
    if (error instanceof GitError && /not a git repository|must be run in a work tree/i.test(error.stderr)) return null;
    throw error;
  }
  const [toplevel, commonDir, prefix] = lines;
  if (!toplevel || !commonDir) return null;
  return { toplevel, commonDir, prefix: (prefix ?? "").replace(/\/$/, "") };
}

/** Like repoInfo, but a missing repository is an error that says what needed it. */
export function requireRepo(dir: string, why: string): RepoInfo {
  const info = repoInfo(dir);
  if (!info) throw new Error(`${dir} is not inside a git working tree, which ${why} needs`);
  return info;
}

/** The commit `ref` names in `repo`, or null. */
export function resolveCommit(repo: string, ref: string): string | null {
  return gitQuery(repo, ["rev-parse", "--verify", "-q", `${ref}^{commit}`]);
}

/** The commit `ref` names, also trying it as a branch of `origin` (a fresh clone has few local branches). */
export function resolveCommitOrRemote(repo: string, ref: string, what: string): string {
  const sha = resolveCommit(repo, ref) ?? resolveCommit(repo, `refs/remotes/origin/${ref}`);
  if (!sha) throw new Error(`${what} ${JSON.stringify(ref)} does not name a commit in ${repo}`);
  return sha;
}

/** The commit branch `name` points to, or null when there is no such branch. */
export function branchCommit(repo: string, name: string): string | null {
  return gitQuery(repo, ["rev-parse", "--verify", "-q", `refs/heads/${name}`]);
}

/** Throws unless `name` is a valid branch name. */
function checkBranchName(repo: string, name: string, what: string): void {
  try {
    gitRead(repo, ["check-ref-format", "--branch", name]);
  } catch (error) {
    // git refuses the name by exiting 128 ("fatal: '…' is not a valid branch name").
    if (!(error instanceof GitError && error.exitCode === 128)) throw error;
    throw new Error(`${what} ${JSON.stringify(name)} is not a valid git branch name`);
  }
}

/** Throws an error that names the branch when it already exists (branch / branch-off placements). */
export function requireNewBranch(repo: string, name: string, what: string): void {
  checkBranchName(repo, name, what);
  if (branchCommit(repo, name) !== null) {
    throw new Error(`${what} ${JSON.stringify(name)} already exists in ${repo}; choose a new branch name or use a checkout placement`);
  }
}

/** The checked-out branch of a working tree, "" when HEAD is detached. */
export function currentBranch(dir: string): string {
  return gitQuery(dir, ["symbolic-ref", "-q", "--short", "HEAD"]) ?? "";
}

/** The commit checked out in a working tree, or null before the first commit. */
export function headCommit(dir: string): string | null {
  return gitQuery(dir, ["rev-parse", "--verify", "-q", "HEAD^{commit}"]);
}

/**
 * Fetches the first fetchable of `refs` into `scratchRef` (a ref in our own namespace, forced)
 * and returns the commit. The branch is moved separately (moveBranch) once that commit is on
 * record, so an interrupted create always knows what it would have to undo.
 */
export async function fetchCommit(repo: string, refs: { remote: string; ref: string }[], scratchRef: string, tracker: ChildTracker, settings: GitSettings): Promise<string> {
  const failures: string[] = [];
  for (const { remote, ref } of refs) {
    try {
      await gitRun(repo, ["fetch", "--no-tags", "--no-write-fetch-head", remote, `+${ref}:${scratchRef}`], tracker, settings);
      return gitRead(repo, ["rev-parse", "--verify", `${scratchRef}^{commit}`]);
    } catch (error) {
      if (!(error instanceof GitError)) throw error;
      failures.push(error.message);
    }
  }
  throw new Error(`could not fetch ${refs.map((r) => `${r.remote} ${r.ref}`).join(", ")}:\n${failures.join("\n")}`);
}

/**
 * Points branch `name` at `commit`: creates it when `before` is null, otherwise only
 * fast-forwards it, and never moves a branch checked out in some worktree. The update is
 * atomic against `before`, so a concurrent change makes it fail instead of being lost.
 */
export function moveBranch(repo: string, name: string, commit: string, before: string | null): void {
  const ref = `refs/heads/${name}`;
  if (before !== null && before !== commit) {
    if (!isAncestor(repo, before, commit)) {
      throw new Error(`branch ${JSON.stringify(name)} in ${repo} has diverged from the fetched ${commit.slice(0, 12)}; refusing to overwrite it`);
    }
    const holder = worktreeOnBranch(repo, ref);
    if (holder) throw new Error(`branch ${JSON.stringify(name)} is checked out at ${holder}; refusing to move it`);
  }
  gitRead(repo, ["update-ref", "-m", "paseo-host-runtime: change request checkout", ref, commit, before ?? ""]);
}

/** Whether commit `ancestor` is reachable from `ref` (git merge-base --is-ancestor). */
export function isAncestor(repo: string, ancestor: string, ref: string): boolean {
  return gitQuery(repo, ["merge-base", "--is-ancestor", ancestor, ref]) !== null;
}

/** The worktree that has `ref` checked out, or null. */
export function worktreeOnBranch(repo: string, ref: string): string | null {
  let path: string | null = null;
  for (const line of gitRead(repo, ["worktree", "list", "--porcelain"]).split("\n")) {
    if (line.startsWith("worktree ")) path = line.slice("worktree ".length);
    else if (line === `branch ${ref}`) return path;
  }
  return null;
}

/** Deletes a ref of our own namespace if it exists. */
export function deleteScratchRef(repo: string, ref: string): void {
  if (gitQuery(repo, ["rev-parse", "--verify", "-q", ref]) !== null) gitRead(repo, ["update-ref", "-d", ref]);
}

/** The paths of the submodule entries (gitlinks, mode 160000) in `ls-files --stage -z` output. */
export function gitlinksOf(listed: string): string[] {
  return listed
    .split("\0")
    .filter((entry) => entry.startsWith("160000 "))
    .map((entry) => entry.slice(entry.indexOf("\t") + 1))
    .filter((path) => path !== "");
}

/**
 * For an adopted directory at create: its git dirs when the directory is the top of a working
 * tree (where its `.git` is), else null. What the sandbox's private git dir syncs with
 * (sandbox/git/private-git.ts), recorded here so it is the record's word, never the checkout's.
 */
export function adoptedGit(root: string): WorkspaceDetails["git"] {
  const info = repoInfo(root);
  if (!info || info.toplevel !== root) return null;
  const gitDir = gitRead(root, ["rev-parse", "--path-format=absolute", "--git-dir"]);
  return { gitDir, commonDir: info.commonDir, dotGit: lstatSync(join(root, ".git")).isDirectory() ? "directory" : "file" };
}
