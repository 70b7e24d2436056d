/**
 * Before each sandboxed exec: the private git dir (P) made if need be, a sync out that failed
 * before retried, then what the user changed since the last sync (a branch, a tag, a
 * remote-tracking ref, the checkout's HEAD, its index, the shallow file) written into P, unless
 * the workload changed that same thing in P (then P keeps the workload's). Also the user's
 * submodule paths the sandbox must hold, read again whenever their index changed.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { logLine } from "../../log/runtime-log.ts";
import { PATH_MISSING, tolerating } from "../../platform/errno.ts";
import { GitError, gitCapture } from "../../workspace/git.ts";
import { runInJail } from "./jail.ts";
import { publishChanges } from "./sync-out.ts";
import { fileIdentity, jailBound, privateSide, readState, settingsOf, userSide, withGitLock, writeState, type GitSyncContext, type SyncState } from "./sync-state.ts";
import { removeOwnedTree } from "../../workspace/owned-tree.ts";
import { hasPrivateGit, makePrivateGit } from "./private-git.ts";
import { gitlinksOf } from "../../workspace/repo.ts";

/** The refs carried from the user into P. */
const SYNCED = /^refs\/(heads|tags|remotes)\//;
/** Where a host file is shown to the jail for a copy into P. */
const INBOX = "/.paseo-git-in";

/**
 * Before a sandboxed exec: makes P when the workspace has none yet (`stillUsable` is asked under
 * the lock first, so a destroy under way is not undone), retries a sync out that failed, then
 * writes into P what the user changed. Returns the user's submodule paths the sandbox must
 * keep from the workload.
 */
export function prepareGit(ctx: GitSyncContext, stillUsable: () => boolean): string[] {
  const unavailable = () => new Error(`the private git directory of workspace ${JSON.stringify(ctx.workspaceId)} cannot be prepared: the workspace is being paused or destroyed`);
  // An adopted directory's workspace has owned storage only once it has a private git dir.
  const madeStorage = !existsSync(ctx.paths.storage);
  if (madeStorage) {
    if (!stillUsable()) throw unavailable();
    mkdirSync(ctx.paths.storage, { recursive: true, mode: 0o700 });
  }
  const outcome = withGitLock(ctx.paths, ctx.timeoutMs, () => {
    if (!stillUsable()) return null;
    let state: SyncState;
    if (hasPrivateGit(ctx.paths)) state = readState(ctx.paths);
    else {
      makePrivateGit(ctx.user, ctx.paths, settingsOf(ctx));
      state = { version: 1, base: {}, head: readFileSync(join(ctx.paths.dir, "HEAD"), "utf8").trim(), user: null, seen: "", published: {}, submodules: [], privateIndex: "" };
    }
    // What an earlier exec made and could not bring out goes first: syncIn never overwrites it, but it should not wait for the workload's next exit.
    if (state.problem || state.pending) state = publishChanges(ctx, state);
    let next = state;
    try {
      next = syncIn(ctx, state);
    } catch (error) {
      // P stays as the last sync left it: the exec runs with the workspace's own git as it is.
      logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `the user's repository was not brought into the workspace's git directory: ${(error as Error).message}` });
      if (state.user === null) throw error;
    }
    next = withSubmodules(ctx, next);
    writeState(ctx.paths, next);
    return next.submodules;
  });
  if (outcome === null) {
    // A destroy came first: what this call made for nothing is not left behind.
    if (madeStorage) removeOwnedTree(ctx.paths.storage);
    throw unavailable();
  }
  return outcome;
}

function syncIn(ctx: GitSyncContext, state: SyncState): SyncState {
  const { side, refs } = userSide(ctx);
  const before = state.user;
  if (before && before.refs === side.refs && before.head === side.head && before.index === side.index && before.shallow === side.shallow) return state;
  const found = privateSide(ctx);
  if (found === null) return state;
  const next: SyncState = { ...state, base: { ...state.base }, user: side };
  if (before?.refs !== side.refs && !copyRefs(ctx, refs, found.refs, next)) next.user = { ...side, refs: "" };
  const head = copyHead(ctx, side.head, found.head, next);
  if (before?.index !== side.index && (head !== side.head || !copyIndex(ctx, next))) next.user = { ...next.user!, index: "" };
  if (before?.shallow !== side.shallow && !copyIntoPrivate(ctx, "shallow", [join(ctx.user.commonDir, "shallow")])) next.user = { ...next.user!, shallow: "" };
  return next;
}

/**
 * The user's refs into P: each one the workload left as it was last given (or never had) takes
 * the user's value, created, moved or deleted in one transaction that fails if P moved
 * meanwhile. Refs the workload changed stay the workload's. False when the transaction failed.
 */
function copyRefs(ctx: GitSyncContext, userRefs: Map<string, string>, privateRefs: Map<string, string>, next: SyncState): boolean {
  const commands: string[] = [];
  const agreed: [string, string | undefined][] = [];
  for (const ref of new Set([...userRefs.keys(), ...Object.keys(next.base)])) {
    if (!SYNCED.test(ref)) continue;
    const [theirs, given, ours] = [userRefs.get(ref), next.base[ref], privateRefs.get(ref)];
    if (ours === given) {
      if (theirs === undefined && ours !== undefined) commands.push(`delete ${ref} ${ours}`);
      else if (theirs !== undefined && theirs !== ours) commands.push(`update ${ref} ${theirs} ${ours ?? "0".repeat(theirs.length)}`);
      agreed.push([ref, theirs]);
    } else if (ours === theirs) agreed.push([ref, theirs]);
  }
  if (commands.length > 0) {
    const result = runInJail(ctx.user, ctx.paths, ["git", "--git-dir", ctx.paths.dir, "update-ref", "-m", "paseo-host-runtime: from your repository", "--stdin"], jailBound(ctx), `${commands.join("\n")}\n`);
    if (!result.ok) {
      logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `the user's refs were not written into the workspace's git directory this time: ${result.problem}` });
      return false;
    }
    // Loose refs by the thousand (a repository's tags) are packed: git in P stays fast.
    if (commands.length > 200) runInJail(ctx.user, ctx.paths, ["git", "--git-dir", ctx.paths.dir, "pack-refs", "--all"], jailBound(ctx));
  }
  for (const [ref, value] of agreed) {
    if (value === undefined) delete next.base[ref];
    else next.base[ref] = value;
  }
  return true;
}

/** The user's HEAD into P when the workload left P's as it was given; returns P's HEAD afterwards. */
function copyHead(ctx: GitSyncContext, theirs: string, ours: string, next: SyncState): string {
  if (ours !== next.head || theirs === ours) {
    if (theirs === ours) next.head = theirs;
    return ours;
  }
  const argv = theirs.startsWith("ref: ")
    ? ["git", "--git-dir", ctx.paths.dir, "symbolic-ref", "-m", "paseo-host-runtime: from your checkout", "HEAD", theirs.slice(5)]
    : ["git", "--git-dir", ctx.paths.dir, "update-ref", "--no-deref", "-m", "paseo-host-runtime: from your checkout", "HEAD", theirs];
  const result = runInJail(ctx.user, ctx.paths, argv, jailBound(ctx));
  if (!result.ok) {
    logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `the checkout's HEAD was not written into the workspace's git directory: ${result.problem}` });
    return ours;
  }
  next.head = theirs;
  return theirs;
}

/** `sharedindex.*` files a split index names (copied with it). */
function sharedIndexes(gitDir: string): string[] {
  return tolerating(PATH_MISSING, [] as string[], () => readdirSync(gitDir))
    .filter((name) => name.startsWith("sharedindex."))
    .map((name) => join(gitDir, name));
}

/** What P's index holds (its entries, not its stat cache), as git in the jail prints it: a `git status` refresh does not change it. */
const INDEX_DIGEST = "git --git-dir=. ls-files --stage | git --git-dir=. hash-object --stdin";

/**
 * The user's index into P, unless the workload staged work of its own there: P's index is
 * replaced only when its entries are still those the runtime last gave it, or when nothing in
 * it is staged against P's HEAD (nothing of the workload's to lose). Otherwise P keeps the
 * workload's index, the user's stays as it is, and the log says so. False when not copied.
 */
function copyIndex(ctx: GitSyncContext, next: SyncState): boolean {
  const guard = `given="$2"; if [ -n "$given" ] && [ "$(${INDEX_DIGEST})" != "$given" ] && ! git --git-dir=. diff-index --cached --quiet HEAD -- 2>/dev/null; then echo kept; exit 0; fi`;
  const result = copyIntoPrivate(ctx, "index", [join(ctx.user.gitDir, "index"), ...sharedIndexes(ctx.user.gitDir)], { guard, after: INDEX_DIGEST, argument: next.privateIndex ?? "" });
  if (result === null) return false;
  if (result.trim() === "kept") {
    logLine("info", "git-index-kept", { workspaceId: ctx.workspaceId, index: join(ctx.paths.dir, "index"), reason: "the workload staged changes in the workspace's index and you changed yours: the workspace keeps its own, yours is untouched" });
    return true;
  }
  next.privateIndex = result.trim();
  return true;
}

/**
 * Copies host files (the user's, so trusted) into P through the jail, each under git's lock
 * protocol (`<name>.lock` created exclusively, then renamed), so a git working in P at that
 * moment is never overwritten: the copy is skipped. The first file is `name`; a missing one is
 * removed from P. `script.guard` may end the copy early (its output is returned), `script.after`
 * prints what the caller keeps. Null when the copy did not happen.
 */
function copyIntoPrivate(ctx: GitSyncContext, name: string, files: string[], script: { guard: string; after: string; argument: string } = { guard: "true", after: "true", argument: "" }): string | null {
  const [main, ...others] = files;
  const present = existsSync(main!);
  const overlays = files.filter(existsSync).map((file) => ({ source: file, target: join(INBOX, file.split("/").at(-1)!), writable: false }));
  const copies = others.filter(existsSync).map((file) => `cp -f ${INBOX}/${file.split("/").at(-1)} .`);
  const install = present ? `set -C && cat ${INBOX}/${main!.split("/").at(-1)} > ${name}.lock && mv -f ${name}.lock ${name}` : `rm -f ${name}`;
  const body = `cd "$1" && { ${script.guard}; } && ${[...copies, install].join(" && ")} && { ${script.after}; }`;
  const result = runInJail(ctx.user, ctx.paths, ["/bin/sh", "-c", body, "sh", ctx.paths.dir, script.argument], jailBound(ctx), "", overlays);
  if (!result.ok) {
    logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `the checkout's ${name} was not copied into the workspace's git directory this time: ${result.problem}` });
    return null;
  }
  return result.stdout;
}

/**
 * The user's submodule paths, read again whenever their index changed since they were last
 * read, whatever became of the rest of the sync: a workload that makes P unreadable (a FIFO for
 * its HEAD) stops the sync into P, never the pins (a submodule the user added meanwhile would
 * otherwise go unpinned, its `.git` the workload's to make).
 */
function withSubmodules(ctx: GitSyncContext, state: SyncState): SyncState {
  const index = fileIdentity(join(ctx.user.gitDir, "index"));
  return index === state.submodulesOf ? state : { ...state, submodules: submodulesOf(ctx), submodulesOf: index };
}

/** The user's submodule paths: the gitlinks of their index (none when git cannot read it: nothing to hold). */
function submodulesOf(ctx: GitSyncContext): string[] {
  try {
    const listed = gitCapture("/", ["--git-dir", ctx.user.gitDir, "ls-files", "--stage", "-z"], settingsOf(ctx)).stdout;
    return gitlinksOf(listed).filter((path) => !path.split("/").includes("..") && !path.startsWith("/"));
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    return [];
  }
}
