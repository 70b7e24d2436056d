/**
 * Releasing a sandboxed workspace's private git dir (P) at destroy (and reconcile, orphans
 * removal, a failed create's undo): nothing the workload committed is lost. First every ref of
 * P not yet in the user's repository is fetched to the workspace's namespace there (no branch
 * policy needed); if that cannot be done, P is kept and the destroy stops as unfinished, saying
 * why and what to do. Then the namespace refs whose commits are on a branch of the user's go,
 * the others stay (logged), and P goes, all under the git lock, whose wait is bounded.
 */
import { existsSync, rmSync } from "node:fs";
import { logLine } from "../../log/runtime-log.ts";
import { shellQuote } from "../../shell-quote.ts";
import { GitError } from "../../workspace/git.ts";
import { fetchObjects, refsToPublish, valueIn } from "./sync-out.ts";
import { GitLockBusy, namespaceOf, readPrivateSide, readState, userGit, withGitLock, type GitSyncContext } from "./sync-state.ts";
import { removeOwnedTree } from "../../workspace/owned-tree.ts";
import { hasPrivateGit } from "./private-git.ts";

/** How long destroy waits for a sync under way (each of its steps is bounded) before it stops as unfinished. */
const DESTROY_LOCK_WAIT_MS = 30_000;
/** Kept refs named one by one in the log line; the rest are counted. */
const NAMED = 20;

/** A destroy that must keep P: its message is the unfinished destroy's reason. */
export class GitNotReleased extends Error {
  override name = "GitNotReleased";
}

/** For destroy: P's work brought out, the namespace released, P removed (see the top of the file). */
export function releasePrivateGit(ctx: GitSyncContext): void {
  try {
    withGitLock(ctx.paths, DESTROY_LOCK_WAIT_MS, () => {
      if (hasPrivateGit(ctx.paths)) bringEverythingOut(ctx);
      tidyNamespace(ctx);
      rmSync(ctx.paths.state, { force: true });
      removeOwnedTree(ctx.paths.dir);
    });
  } catch (error) {
    if (error instanceof GitLockBusy) throw new GitNotReleased(`${error.message}; destroy it again once that sync ended`);
    throw error;
  }
}

/**
 * Every ref of P's the namespace does not hold yet: its objects fetched, and a namespace ref
 * made for each value no branch of the user's reaches (one per value: names of a commit already
 * kept are counted, not made, so a flood of refs at one commit costs one ref). Throws
 * GitNotReleased when it cannot be done.
 */
function bringEverythingOut(ctx: GitSyncContext): void {
  // P removed by hand (the way to give up what it holds), or a repository that is gone (the objects P borrows went with it): nothing to bring.
  if (!existsSync(ctx.paths.dir) || !existsSync(ctx.user.commonDir)) return;
  const found = readPrivateSide(ctx);
  if (typeof found === "string") throw notReleased(ctx, found);
  const refs = refsToPublish(found, readState(ctx.paths));
  if (refs.length === 0) return;
  const problem = fetchObjects(ctx, refs.map((ref) => valueIn(found, ref)));
  if (problem !== null) throw notReleased(ctx, problem);
  try {
    keepUnreached(ctx, refs.map((ref) => [ref, valueIn(found, ref)]));
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    throw notReleased(ctx, error.message);
  }
}

/** A namespace ref for each value of `refs` (name, object id) that no branch of the user's reaches, in one transaction. */
function keepUnreached(ctx: GitSyncContext, refs: [string, string][]): void {
  const values = [...new Set(refs.map(([, value]) => value))];
  const types = new Map(
    userGit(ctx, ["cat-file", "--batch-check=%(objectname) %(objecttype)"], `${values.join("\n")}\n`)
      .split("\n")
      .map((line) => line.split(" ") as [string, string]),
  );
  const commits = values.filter((value) => types.get(value) === "commit");
  const unreached = unreachedByBranches(ctx, commits);
  // A tag object (or anything but a commit) is kept whatever it points at: it is the workload's own object.
  const needed = new Set(values.filter((value) => types.get(value) !== "commit" || unreached.has(value)));
  const namespace = namespaceOf(ctx.workspaceId);
  const lines: string[] = [];
  for (const [ref, value] of refs) {
    if (!needed.delete(value)) continue;
    lines.push(`update ${namespace}/${ref} ${value}\n`);
  }
  if (lines.length > 0) userGit(ctx, ["update-ref", "-m", `paseo-host-runtime: destroy of workspace ${ctx.workspaceId}`, "--stdin"], lines.join(""));
  if (refs.length > lines.length) logLine("info", "git-refs-saved", { workspaceId: ctx.workspaceId, refs: refs.length, kept: lines.length, reason: "at destroy, every commit of the workspace's that no branch of yours reaches got one ref under the namespace (names of a commit already kept are not made)" });
}

function notReleased(ctx: GitSyncContext, problem: string): GitNotReleased {
  const dir = shellQuote(ctx.paths.dir);
  return new GitNotReleased(
    `the workspace's private git directory ${dir} may hold commits that are not in ${ctx.user.commonDir} yet, and they could not be brought there (${problem}); it is kept: destroy the workspace again once that is fixed (its commits then go to ${namespaceOf(ctx.workspaceId)}/), or give them up with rm -rf ${dir} and destroy again`,
  );
}

/** releaseNamespace; a repository git cannot read keeps its namespace refs (nothing is lost by that), logged. */
function tidyNamespace(ctx: GitSyncContext): void {
  try {
    releaseNamespace(ctx);
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `the refs under ${namespaceOf(ctx.workspaceId)} were left as they are: ${error.message}` });
  }
}

/**
 * The namespace refs whose commits are on a branch of the user's are removed; the others
 * (commits on no branch: a refused move, a tag, a stash, a detached HEAD) are kept for the
 * operator, and the runtime log says where. One listing, one walk, one transaction.
 */
function releaseNamespace(ctx: GitSyncContext): void {
  if (!existsSync(ctx.user.commonDir)) return;
  const namespace = namespaceOf(ctx.workspaceId);
  const refs = userGit(ctx, ["for-each-ref", "--format=%(refname)%09%(objectname)%09%(objecttype)%09%(*objectname)%09%(*objecttype)", `${namespace}/`])
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [ref, id, type, peeled, peeledType] = line.split("\t");
      return { ref: ref!, id: id!, commit: type === "commit" ? id! : peeledType === "commit" ? peeled! : null };
    });
  if (refs.length === 0) return;
  const commits = [...new Set(refs.flatMap((ref) => ref.commit ?? []))];
  // The commits the refs reach that no branch reaches: a ref whose own commit is not among them is on a branch.
  const unmerged = unreachedByBranches(ctx, commits);
  const merged = refs.filter((ref) => ref.commit !== null && !unmerged.has(ref.commit));
  if (merged.length > 0) userGit(ctx, ["update-ref", "--stdin"], merged.map(({ ref, id }) => `delete ${ref} ${id}\n`).join(""));
  const kept = refs.filter((ref) => !merged.includes(ref)).map(({ ref }) => ref);
  if (kept.length > 0) {
    const more = kept.length > NAMED ? { more: kept.length - NAMED } : {};
    logLine("info", "git-refs-kept", { workspaceId: ctx.workspaceId, refs: kept.slice(0, NAMED), ...more, reason: `their commits are on no branch of your repository; delete them with git update-ref -d (or all of ${namespace}/ at once) when no longer wanted` });
  }
}

/** The commits reachable from `commits` that no branch of the user's reaches (one walk): a commit of `commits` not among them is on a branch. */
function unreachedByBranches(ctx: GitSyncContext, commits: readonly string[]): Set<string> {
  if (commits.length === 0) return new Set();
  return new Set(userGit(ctx, ["rev-list", "--stdin", "--not", "--branches"], `${commits.join("\n")}\n`).split("\n"));
}
