/**
 * A create's host directory that a sandboxed workload writes. The runtime's own host git runs
 * in whatever repository it finds at a create's source (`git worktree add`, a clone), and a
 * `.git` the workload made there (its hooks, its core.fsmonitor) would run on the host
 * (docs/design/sandbox.md). Such a source is refused, except where the
 * runtime holds the `.git` itself: the root of an adopted checkout whose git dirs it recorded
 * (a private git dir is shown over it), and a worktree's checkout (its `.git` is a file of the
 * user's, read-only inside).
 */
import type { Database } from "bun:sqlite";
import { realPathOrNull } from "../../platform/lookup.ts";
import { listWorkspaces, type WorkspaceRecord } from "../../store/workspaces.ts";
import { GitError, gitRead } from "../../workspace/git.ts";
import { isInside } from "../../workspace/paths.ts";

/**
 * Why `source` (a real path) may not be a create's source, or null. A repeated create of
 * `workspaceId` is its own. The source's git dirs count as well as the source: a
 * `sandboxReadWrite` holding a repository's `.git` (or its separate git dir) would give the
 * workload the hooks `git worktree add` runs there.
 */
export function workloadWrittenSource(db: Database, source: string, workspaceId: string): string | null {
  const areas = listWorkspaces(db)
    .filter((record) => record.isolation?.isolation === "sandbox" && record.workspaceId !== workspaceId)
    .flatMap((record) => writableDirectories(record).flatMap(({ dir, heldGit }) => {
      const real = realPathOrNull(dir);
      return real === null ? [] : [{ record, real, heldGit }];
    }));
  const direct = areas.find(({ real, heldGit }) => isInside(real, source) || (real === source && !heldGit));
  if (direct !== undefined) return refusal(source, direct.real, direct.record);
  if (areas.length === 0) return null;
  // Asked of git only now that no area holds the source itself: git reads nothing of a workload's there.
  const gitDirs = gitDirsOf(source);
  for (const { record, real } of areas) {
    const held = heldGitDirs(record);
    const reached = gitDirs.find((gitDir) => (gitDir === real || isInside(real, gitDir)) && !held.some((own) => own === gitDir || isInside(own, gitDir)));
    if (reached !== undefined) return refusal(`${source} (its git dir ${reached})`, real, record);
  }
  return null;
}

function refusal(what: string, real: string, record: WorkspaceRecord): string {
  return `input.project.source.path ${what} is inside ${real}, which the sandboxed workload of workspace ${JSON.stringify(record.workspaceId)} writes, a .git included: this runtime's git would run that workload's; create from the repository itself, or destroy that workspace first`;
}

/** The real paths of the git dir and common git dir of the repository holding `source` (none outside a repository). */
function gitDirsOf(source: string): string[] {
  let listed: string;
  try {
    listed = gitRead(source, ["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"]);
  } catch (error) {
    if (error instanceof GitError && /not a git repository/i.test(error.stderr)) return [];
    throw error;
  }
  return listed.split("\n").flatMap((path) => (path === "" ? [] : [realPathOrNull(path) ?? path]));
}

/** The git dirs a workspace's sandbox shows as its private git dir (an adopted root's recorded ones): never the workload's to write. */
function heldGitDirs(record: WorkspaceRecord): string[] {
  const git = record.kind === "adopted" ? record.details.git : null;
  return git ? [git.gitDir, git.commonDir].map((path) => realPathOrNull(path) ?? path) : [];
}

/** What a sandboxed workspace's workloads write, and whether the `.git` at its top is the runtime's to hold. */
function writableDirectories(record: WorkspaceRecord): { dir: string; heldGit: boolean }[] {
  const extra = record.isolation?.isolation === "sandbox" ? record.isolation.sandboxReadWrite.map((dir) => ({ dir, heldGit: false })) : [];
  const { checkout, git } = record.details;
  if (record.kind === "adopted" && record.root !== null) return [{ dir: record.root, heldGit: git !== null }, ...extra];
  if (checkout !== undefined) return [{ dir: checkout, heldGit: record.kind === "worktree" }, ...extra];
  return extra;
}
