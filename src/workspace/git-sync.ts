/**
 * Keeping a sandboxed workspace's private git directory (P, private-git.ts) and the user's
 * repository in step, so the workload's work reaches the user as it would without the sandbox.
 *
 * Before each sandboxed exec (syncIn): what the user changed since the last sync (a branch, a
 * tag, a remote-tracking ref, the checkout's HEAD, its index, the shallow file) is written into
 * P, unless the workload changed that same thing in P (then P keeps the workload's).
 *
 * After each sandboxed exec, before its `exit` is written (syncOut): every branch, tag and stash
 * the workload changed in P, and a detached HEAD, are fetched into the user's repository under
 * refs/paseo-host-runtime/workspaces/<key>/, where the operator sees them; the fetch runs P's
 * side in the jail (git-jail.ts) and checks every object received. Then each branch the workload
 * changed is moved in the user's repository by compare-and-swap, from the value the workspace
 * was last given: never a branch the user moved meanwhile, never one checked out in another
 * worktree. Those stay where they are, their new commits at the namespace ref, and the runtime
 * log says so. A move that is not a fast-forward (an amend, a rebase) is made like git in the
 * checkout would make it, the old tip kept in the branch's reflog. When the branch the user's
 * checkout is on moved, its index is brought forward from the two commits (`read-tree -m`),
 * never from the workload's index.
 *
 * The runtime's own record of what it last agreed (the state file) is beside P, not in it.
 */
import { closeSync, existsSync, lstatSync, mkdirSync, opendirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { logLine } from "../log/runtime-log.ts";
import { tolerating } from "../platform/errno.ts";
import { tryLockExclusive } from "../platform/libc/locks.ts";
import type { GitSettings } from "./git-environment.ts";
import { GitError, gitCapture } from "./git.ts";
import { runInJail, uploadPackCommand } from "./git-jail.ts";
import { workspaceKey } from "./paths.ts";
import { gitlinksOf } from "./repo.ts";
import { hasPrivateGit, makePrivateGit, readHead, type PrivateGitPaths, type UserGit } from "./private-git.ts";
import { removeOwnedTree } from "./owned-tree.ts";

/** One workspace's git, as the syncs see it. */
export interface GitSyncContext {
  workspaceId: string;
  user: UserGit;
  paths: PrivateGitPaths;
  /** Adopted checkouts: the user's submodule directories are kept from the workload (private-git.ts workloadOverlays). */
  guardSubmodules: boolean;
  /** options.gitTimeoutMs: the bound on each host git command of a sync (a jailed step has JAIL_STEP_MS). */
  timeoutMs: number;
}

interface SyncState {
  version: 1;
  /** Per ref the syncs carry (SYNCED): the value the workspace and the user's repository last agreed on. */
  base: Record<string, string>;
  /** P's HEAD as the runtime last wrote it (`ref: refs/heads/x` or a commit id). */
  head: string;
  /** The user's side when it was last written into P (null: never). */
  user: UserSide | null;
  /** A digest of P's refs and HEAD as the last sync saw them. */
  seen: string;
  /** refStorageOf(P) taken just before syncOut last read P's refs ("" when unknown). */
  storage?: string;
  /** The refs syncOut keeps under the namespace (names in P). */
  published: string[];
  /** The user's submodule paths (adopted checkouts), from their index. */
  submodules: string[];
  /** fileIdentity of the user's index when `submodules` was read from it. */
  submodulesOf?: string;
}

/** What of the user's repository a sync copies, each part as a comparable text. */
interface UserSide {
  refs: string;
  head: string;
  index: string;
  shallow: string;
}

/** The refs carried from the user into P. */
const SYNCED = /^refs\/(heads|tags|remotes)\//;
/** The refs of P brought into the user's repository's namespace when the workload changed them. */
const PUBLISHED = /^refs\/(heads\/|tags\/|stash$)/;
const OBJECT_ID = /^([0-9a-f]{40}|[0-9a-f]{64})$/;
/** Where a host file is shown to the jail for a copy into P. */
const INBOX = "/.paseo-git-in";

/**
 * The bound on a jailed read or copy of P: they are quick whatever P's size, and what runs there
 * is the workload's (an alternates file made a FIFO would wait for ever), so not options.gitTimeoutMs.
 */
const JAIL_STEP_MS = 30_000;

function jailBound(ctx: GitSyncContext): number {
  return Math.min(ctx.timeoutMs, JAIL_STEP_MS);
}

function settingsOf(ctx: GitSyncContext, protocols: string[] = []): GitSettings {
  return { policy: { protocols, timeoutMs: ctx.timeoutMs } };
}

/** The namespace of this workspace's refs in the user's repository. */
function namespaceOf(workspaceId: string): string {
  return `refs/paseo-host-runtime/workspaces/${workspaceKey(workspaceId)}`;
}

/**
 * A ref name as git itself would accept one (check-ref-format), under refs/: what P reports is
 * the workload's word, and it becomes an argument of the user's git.
 */
function validRefName(name: string): boolean {
  if (!name.startsWith("refs/") || name.endsWith("/") || name.endsWith(".") || name.includes("..") || name.includes("@{") || name.includes("//")) return false;
  // Control characters, space, and what git's ref syntax reserves.
  if (/[\u0000-\u0020\u007f~^:?*[\\]/.test(name)) return false;
  return name.split("/").every((part) => part !== "" && !part.startsWith(".") && !part.endsWith(".lock"));
}

/** `<id> <ref>` lines as a map; a line of another shape (never one git prints) is skipped. */
function refLines(text: string): Map<string, string> {
  const refs = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const space = line.indexOf(" ");
    const [id, name] = [line.slice(0, space), line.slice(space + 1)];
    if (OBJECT_ID.test(id) && validRefName(name)) refs.set(name, id);
  }
  return refs;
}

/** Identity of a file as a text that changes whenever git rewrites it ("none" when missing). */
function fileIdentity(path: string): string {
  const stat = lstatSync(path, { bigint: true, throwIfNoEntry: false });
  return stat ? `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}` : "none";
}

function userSide(ctx: GitSyncContext): { side: UserSide; refs: Map<string, string> } {
  const { user } = ctx;
  const listed = gitCapture("/", ["--git-dir", user.commonDir, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags", "refs/remotes"], settingsOf(ctx)).stdout;
  const side = { refs: digest(listed), head: readHead(user.gitDir), index: fileIdentity(join(user.gitDir, "index")), shallow: fileIdentity(join(user.commonDir, "shallow")) };
  return { side, refs: refLines(listed) };
}

function digest(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}

/** P's refs and HEAD, read in the jail; null (and why, in the log) when the jail could not tell. */
function privateSide(ctx: GitSyncContext): { refs: Map<string, string>; head: string; digest: string } | null {
  // A ref listing git could not finish is no listing: read as "no refs", it would unpublish the workspace's kept commits.
  const script = `git --git-dir="$1" for-each-ref --format='%(objectname) %(refname)' || exit 1; printf 'HEAD '; git --git-dir="$1" symbolic-ref -q HEAD || git --git-dir="$1" rev-parse -q --verify HEAD || echo`;
  const read = runInJail(ctx.user, ctx.paths, ["/bin/sh", "-c", script, "sh", ctx.paths.dir], jailBound(ctx));
  if (!read.ok) {
    logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `cannot read the workspace's private git directory ${ctx.paths.dir}: ${read.problem}` });
    return null;
  }
  const headLine = read.stdout.split("\n").find((line) => line.startsWith("HEAD ")) ?? "HEAD ";
  const target = headLine.slice(5).trim();
  const head = OBJECT_ID.test(target) ? target : validRefName(target) ? `ref: ${target}` : "";
  return { refs: refLines(read.stdout), head, digest: digest(read.stdout) };
}

function readState(paths: PrivateGitPaths): SyncState {
  return JSON.parse(readFileSync(paths.state, "utf8")) as SyncState;
}

function writeState(paths: PrivateGitPaths, state: SyncState): void {
  const temporary = `${paths.state}.${process.pid}`;
  writeFileSync(temporary, JSON.stringify(state), { mode: 0o600 });
  renameSync(temporary, paths.state);
}

/**
 * Runs `fn` holding this workspace's git lock (a flock beside P): one sync at a time, and
 * destroy waits for a sync under way. Null when the workspace's storage is gone.
 */
function withGitLock<T>(paths: PrivateGitPaths, fn: () => T): T | null {
  if (!existsSync(paths.storage)) return null;
  let fd: number;
  try {
    fd = openSync(paths.lock, "a", 0o600);
  } catch {
    return null;
  }
  try {
    for (let pause = 1; !tryLockExclusive(fd); pause = Math.min(pause * 2, 50)) Bun.sleepSync(pause);
    return existsSync(paths.storage) ? fn() : null;
  } finally {
    closeSync(fd);
  }
}

/**
 * Before a sandboxed exec: makes P when the workspace has none yet (`stillUsable` is asked under
 * the lock first, so a destroy under way is not undone), then writes into it what the user
 * changed. Returns the user's submodule paths the sandbox must keep from the workload.
 */
export function prepareGit(ctx: GitSyncContext, stillUsable: () => boolean): string[] {
  const unavailable = () => new Error(`the private git directory of workspace ${JSON.stringify(ctx.workspaceId)} cannot be prepared: the workspace is being paused or destroyed`);
  // An adopted directory's workspace has owned storage only once it has a private git dir.
  const madeStorage = !existsSync(ctx.paths.storage);
  if (madeStorage) {
    if (!stillUsable()) throw unavailable();
    mkdirSync(ctx.paths.storage, { recursive: true, mode: 0o700 });
  }
  const outcome = withGitLock(ctx.paths, () => {
    if (!stillUsable()) return null;
    let state: SyncState;
    if (hasPrivateGit(ctx.paths)) state = readState(ctx.paths);
    else {
      makePrivateGit(ctx.user, ctx.paths, settingsOf(ctx));
      state = { version: 1, base: {}, head: readFileSync(join(ctx.paths.dir, "HEAD"), "utf8").trim(), user: null, seen: "", published: [], submodules: [] };
    }
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
  if (before?.index !== side.index) {
    if (head !== side.head || !copyIntoPrivate(ctx, "index", [join(ctx.user.gitDir, "index"), ...sharedIndexes(ctx.user.gitDir)])) next.user = { ...next.user!, index: "" };
  }
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
  try {
    return readdirSync(gitDir)
      .filter((name) => name.startsWith("sharedindex."))
      .map((name) => join(gitDir, name));
  } catch {
    return [];
  }
}

/**
 * Copies host files (the user's, so trusted) into P through the jail, each under git's lock
 * protocol (`<name>.lock` created exclusively, then renamed), so a git working in P at that
 * moment is never overwritten: the copy is skipped. The first file is `name`; a missing one is
 * removed from P. False when the copy did not happen.
 */
function copyIntoPrivate(ctx: GitSyncContext, name: string, files: string[]): boolean {
  const [main, ...others] = files;
  const present = existsSync(main!);
  const overlays = files.filter(existsSync).map((file) => ({ source: file, target: join(INBOX, file.split("/").at(-1)!), writable: false }));
  const copies = others.filter(existsSync).map((file) => `cp -f ${INBOX}/${file.split("/").at(-1)} .`);
  const install = present ? `set -C && cat ${INBOX}/${main!.split("/").at(-1)} > ${name}.lock && mv -f ${name}.lock ${name}` : `rm -f ${name}`;
  const script = `cd "$1" && ${[...copies, install].join(" && ")}`;
  const result = runInJail(ctx.user, ctx.paths, ["/bin/sh", "-c", script, "sh", ctx.paths.dir], jailBound(ctx), "", overlays);
  if (!result.ok) logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `the checkout's ${name} was not copied into the workspace's git directory this time: ${result.problem}` });
  return result.ok;
}

/**
 * The user's submodule paths, read again whenever their index changed since they were last
 * read, whatever became of the rest of the sync: a workload that makes P unreadable (a FIFO for
 * its HEAD) stops the sync into P, never the pins (a submodule the user added meanwhile would
 * otherwise go unpinned, its `.git` the workload's to make).
 */
function withSubmodules(ctx: GitSyncContext, state: SyncState): SyncState {
  if (!ctx.guardSubmodules) return state;
  const index = fileIdentity(join(ctx.user.gitDir, "index"));
  return index === state.submodulesOf ? state : { ...state, submodules: submodulesOf(ctx), submodulesOf: index };
}

/** The user's submodule paths: the gitlinks (mode 160000) of their index. */
function submodulesOf(ctx: GitSyncContext): string[] {
  try {
    const listed = gitCapture("/", ["--git-dir", ctx.user.gitDir, "ls-files", "--stage", "-z"], settingsOf(ctx)).stdout;
    return gitlinksOf(listed).filter((path) => !path.split("/").includes("..") && !path.startsWith("/"));
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    return [];
  }
}

/**
 * After a sandboxed exec, before its `exit`: brings what the workload changed in P into the
 * user's repository (see the top of the file). Problems are the runtime log's: the exec's own
 * outcome stands.
 */
export function syncOut(ctx: GitSyncContext): void {
  withGitLock(ctx.paths, () => {
    if (!hasPrivateGit(ctx.paths)) return;
    const state = readState(ctx.paths);
    // Taken before P is read: a change made while it is read shows next time.
    const storage = refStorageOf(ctx.paths.dir);
    if (storage !== "" && storage === state.storage) return;
    const found = privateSide(ctx);
    if (found === null) return;
    if (found.digest === state.seen) return writeState(ctx.paths, { ...state, storage });
    const changed = [...new Set([...found.refs.keys(), ...Object.keys(state.base)])].filter((ref) => found.refs.get(ref) !== state.base[ref]);
    const published = changed.filter((ref) => found.refs.has(ref) && PUBLISHED.test(ref));
    if (OBJECT_ID.test(found.head)) published.push("HEAD");
    const next: SyncState = { ...state, base: { ...state.base } };
    let moved: string[] = [];
    if (published.length > 0) {
      if (!fetchPublished(ctx, published)) return;
      moved = moveBranches(ctx, published.filter((ref) => ref.startsWith("refs/heads/")), next);
    }
    // A branch that reached the user's repository needs no namespace ref: the branch holds its commits.
    const kept = published.filter((ref) => !moved.includes(ref));
    unpublish(ctx, [...new Set([...state.published, ...published])].filter((ref) => !kept.includes(ref)));
    writeState(ctx.paths, { ...next, seen: found.digest, published: kept, storage });
  });
}

/** At most this many entries of P's ref storage are looked at; more, and P is always read. */
const STORAGE_ENTRIES = 4096;

/**
 * What git changes whenever it writes a ref of P: the identity, size and times of HEAD,
 * packed-refs and every entry under refs/ (and reftable/), looked at without following any
 * symlink. Only a hint that nothing changed (a ctime cannot be set back): "" when P is too
 * big to look at.
 */
function refStorageOf(dir: string): string {
  const hasher = new Bun.CryptoHasher("sha256");
  let entries = 0;
  const visit = (relative: string): boolean => {
    if (++entries > STORAGE_ENTRIES) return false;
    const stat = lstatSync(join(dir, relative), { bigint: true, throwIfNoEntry: false });
    hasher.update(`${relative}\0${stat ? `${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}:${stat.mode}` : "-"}\n`);
    if (!stat?.isDirectory()) return true;
    // Entry by entry, so a directory of millions stops at the bound (a new order only means P is read).
    const listing = opendirSync(join(dir, relative));
    try {
      for (let entry = listing.readSync(); entry !== null; entry = listing.readSync()) if (!visit(join(relative, entry.name))) return false;
      return true;
    } finally {
      listing.closeSync();
    }
  };
  try {
    return ["HEAD", "packed-refs", "refs", "reftable"].every(visit) ? hasher.digest("hex") : "";
  } catch {
    // Changed while looked at, or not what git makes (a FIFO in place of a directory): P is read.
    return "";
  }
}

/** The fetch of `refs` (names in P) into the namespace; false (logged) when it failed. */
function fetchPublished(ctx: GitSyncContext, refs: string[]): boolean {
  const namespace = namespaceOf(ctx.workspaceId);
  const config = ["-c", "fetch.fsckObjects=true", "-c", "transfer.fsckObjects=true", "-c", "maintenance.auto=false", "-c", "gc.auto=0", "-c", "fetch.writeCommitGraph=false"];
  // The refspecs on stdin (git 2.29): as many as the workload made, never too long an argv.
  try {
    const format = gitCapture("/", ["--git-dir", ctx.user.commonDir, "rev-parse", "--show-object-format"], settingsOf(ctx)).stdout.trim();
    mkdirSync(ctx.paths.out, { recursive: true, mode: 0o700 });
    const fetch = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--stdin", `--upload-pack=${uploadPackCommand(ctx.user, ctx.paths, format)}`, "--", ctx.paths.dir];
    gitCapture("/", ["--git-dir", ctx.user.commonDir, ...config, ...fetch], settingsOf(ctx, ["file"]), refs.map((ref) => `+${ref}:${namespace}/${ref}\n`).join(""));
    return true;
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    // Its stderr, not its argv: the jail's command line would fill the line.
    const said = error.stderr.split("\n").filter((line) => line.trim() !== "").slice(0, 2).join(" | ") || `exit ${error.exitCode ?? "by signal"}`;
    logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `the workspace's commits could not be brought into ${ctx.user.commonDir}: git fetch from ${ctx.paths.dir}: ${said}` });
    return false;
  } finally {
    removeOwnedTree(ctx.paths.out);
  }
}

/**
 * Each changed branch moves in the user's repository by compare-and-swap from the value the
 * workspace was last given, unless whyKept says why not; the user's checkout's index follows a
 * move of its own branch. Returns the branches now at the workspace's value there.
 */
function moveBranches(ctx: GitSyncContext, branches: string[], next: SyncState): string[] {
  const moved: string[] = [];
  const namespace = namespaceOf(ctx.workspaceId);
  const current = refLines(gitCapture("/", ["--git-dir", ctx.user.commonDir, "for-each-ref", "--format=%(objectname) %(refname)", `${namespace}/`, "refs/heads"], settingsOf(ctx)).stdout);
  const { holders, busy } = worktreeBranches(ctx);
  const checkedOut = readHead(ctx.user.gitDir);
  // One look at every commit the branches bring; each branch is looked at alone only when one adds a foreign submodule.
  const tips = branches.flatMap((ref) => current.get(`${namespace}/${ref}`) ?? []);
  const foreign = ctx.guardSubmodules && foreignSubmodules(ctx, tips, next.submodules) !== null;
  for (const ref of branches) {
    const [to, given, theirs] = [current.get(`${namespace}/${ref}`), next.base[ref], current.get(ref)];
    if (to === undefined) continue;
    const fields = { workspaceId: ctx.workspaceId, branch: ref.slice("refs/heads/".length), from: given ?? null, to, keptAt: `${namespace}/${ref}` };
    if (theirs === to) {
      next.base[ref] = to;
      moved.push(ref);
      continue;
    }
    const refused = whyKept(ctx, ref, { to, given, theirs }, { holders, busy, foreign }, next.submodules);
    if (refused !== null) {
      logLine("info", "git-branch-kept", { ...fields, reason: `${refused}; not moved: the workspace's commits are at ${namespace}/${ref}` });
      continue;
    }
    try {
      gitCapture("/", ["--git-dir", ctx.user.commonDir, "update-ref", "-m", `paseo-host-runtime: workspace ${ctx.workspaceId}`, ref, to, given ?? "0".repeat(to.length)], settingsOf(ctx));
    } catch (error) {
      if (!(error instanceof GitError)) throw error;
      logLine("info", "git-branch-kept", { ...fields, reason: `${error.message}; the workspace's commits are at ${namespace}/${ref}` });
      continue;
    }
    next.base[ref] = to;
    moved.push(ref);
    const fastForward = given === undefined ? null : isAncestor(ctx, given, to);
    const { keptAt: _, ...movedFields } = fields;
    logLine("info", "git-branch-moved", { ...movedFields, fastForward, ...(fastForward === false ? { note: `not a fast-forward (an amend or rebase in the workspace): ${given} stays in the branch's reflog` } : {}) });
    if (checkedOut === `ref: ${ref}`) refreshIndex(ctx, given, to, next);
  }
  return moved;
}

/** What the user's repository says of its branches: who has one checked out, or a rebase or bisect under way on it. */
interface BranchUse {
  holders: Map<string, string>;
  busy: Map<string, string>;
  /** Whether a commit some branch brings adds a foreign submodule entry (foreignSubmodules). */
  foreign: boolean;
}

/** Why the branch `ref` stays where the user has it instead of moving to `to` (the rules of moveBranches), or null. */
function whyKept(ctx: GitSyncContext, ref: string, values: { to: string; given?: string; theirs?: string }, use: BranchUse, submodules: readonly string[]): string | null {
  const { to, given, theirs } = values;
  if (theirs !== given) return given === undefined ? `the branch was made in your repository meanwhile (at ${theirs})` : `the branch was moved in your repository (to ${theirs}) since the workspace was given ${given}`;
  const holder = use.holders.get(ref);
  if (holder !== undefined && holder !== ctx.user.top) return `the branch is checked out at ${holder}`;
  const busy = use.busy.get(ref);
  if (busy !== undefined) return `the branch is being rebased or bisected at ${busy}`;
  return use.foreign ? foreignSubmodules(ctx, [to], submodules) : null;
}

/**
 * Adopted checkouts: why `tips` may not become branches of the user's, when a commit they bring
 * (one on no branch or tag of theirs) adds a submodule entry (a gitlink) at a path that is not
 * one of the user's submodules. The workload can write any directory of the checkout, a `.git`
 * in it included, and the user's git follows a gitlink's `.git` as a repository of its own: with
 * that commit checked out, the user's `git status` would read the workload's config. Null when
 * there is none.
 */
function foreignSubmodules(ctx: GitSyncContext, tips: readonly string[], submodules: readonly string[]): string | null {
  if (tips.length === 0) return null;
  // -m: a merge's changes against each parent; --root: an orphan branch's first commit; the tips on stdin.
  const argv = ["--git-dir", ctx.user.commonDir, "log", "-z", "--format=", "--raw", "-r", "-m", "--root", "--no-renames", "--no-abbrev", "--stdin", "--not", "--branches", "--tags", "--"];
  const fields = gitCapture("/", argv, settingsOf(ctx), `${tips.join("\n")}\n`).stdout.split("\0");
  const added = new Set<string>();
  for (let i = 0; i < fields.length - 1; i++) {
    const raw = /^\n*:\d{6} (\d{6}) /.exec(fields[i]!);
    if (raw?.[1] === "160000" && !submodules.includes(fields[i + 1]!)) added.add(fields[i + 1]!);
  }
  if (added.size === 0) return null;
  const paths = [...added].slice(0, 3).map((path) => JSON.stringify(path)).join(", ");
  return `its commits add a submodule at ${paths}${added.size > 3 ? ` and ${added.size - 3} more` : ""}, which is not one of your checkout's: its directory there is the workload's to write, a .git included, which your git would then follow`;
}

/** Branch ref → path of the worktree that has it checked out, from `git worktree list`. */
function worktreeBranches(ctx: GitSyncContext): { holders: Map<string, string>; busy: Map<string, string> } {
  const holders = new Map<string, string>();
  let path = "";
  let main: string | null = null;
  for (const line of gitCapture("/", ["--git-dir", ctx.user.commonDir, "worktree", "list", "--porcelain"], settingsOf(ctx)).stdout.split("\n")) {
    if (line.startsWith("worktree ")) {
      path = line.slice("worktree ".length);
      main ??= path;
    } else if (line.startsWith("branch ")) holders.set(line.slice("branch ".length), path);
  }
  return { holders, busy: busyBranches(ctx.user.commonDir, main) };
}

/**
 * Branches a rebase or a bisect is under way on, in any worktree (its HEAD is detached then, so
 * `worktree list` does not name them; git itself refuses to move them): ref → worktree path.
 * The user's own checkout counts too: a rebase in the user's git dir is the user's.
 */
function busyBranches(commonDir: string, main: string | null): Map<string, string> {
  const read = (file: string) => tolerating(["ENOENT", "ENOTDIR"], null, () => readFileSync(file, "utf8").trim());
  const admins: [string, string][] = main === null ? [] : [[commonDir, main]];
  const linked = join(commonDir, "worktrees");
  for (const name of tolerating(["ENOENT", "ENOTDIR"], [] as string[], () => readdirSync(linked))) {
    const dotGit = read(join(linked, name, "gitdir"));
    if (dotGit !== null) admins.push([join(linked, name), dirname(dotGit)]);
  }
  const busy = new Map<string, string>();
  for (const [admin, path] of admins) {
    for (const file of ["rebase-merge/head-name", "rebase-apply/head-name"]) {
      const ref = read(join(admin, file));
      if (ref?.startsWith("refs/heads/")) busy.set(ref, path);
    }
    const bisected = read(join(admin, "BISECT_START"));
    if (bisected) busy.set(`refs/heads/${bisected}`, path);
  }
  return busy;
}

function isAncestor(ctx: GitSyncContext, older: string, newer: string): boolean {
  try {
    gitCapture("/", ["--git-dir", ctx.user.commonDir, "merge-base", "--is-ancestor", older, newer], settingsOf(ctx));
    return true;
  } catch {
    return false;
  }
}

/**
 * The user's checkout's index after its branch moved from `from` to `to`: carried forward like
 * a checkout would (`read-tree -m`, which keeps what the user staged); if that cannot be done,
 * the index of `to` itself. Trusted data only: two commits and the user's own index.
 */
function refreshIndex(ctx: GitSyncContext, from: string | undefined, to: string, next: SyncState): void {
  const gitDir = ["--git-dir", ctx.user.gitDir];
  try {
    gitCapture("/", [...gitDir, "read-tree", ...(from === undefined ? [to] : ["-m", from, to])], settingsOf(ctx));
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    try {
      gitCapture("/", [...gitDir, "read-tree", to], settingsOf(ctx));
      logLine("info", "git-index-reset", { workspaceId: ctx.workspaceId, index: join(ctx.user.gitDir, "index"), to, reason: `could not be carried forward (${error.message.split("\n").at(-1)?.trim()}); it now matches ${to}, the files are untouched` });
    } catch (reset) {
      logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `the index of ${ctx.user.top} was not refreshed: ${(reset as Error).message}` });
      return;
    }
  }
  // Our own rewrite of the user's index is not a change of theirs to copy back over P's.
  if (next.user) next.user = { ...next.user, index: fileIdentity(join(ctx.user.gitDir, "index")) };
}

/** Deletes namespace refs no longer published (the workload's ref went back, or away). */
function unpublish(ctx: GitSyncContext, refs: string[]): void {
  if (refs.length === 0) return;
  const namespace = namespaceOf(ctx.workspaceId);
  const commands = refs.map((ref) => `delete ${namespace}/${ref}\n`).join("");
  try {
    gitCapture("/", ["--git-dir", ctx.user.commonDir, "update-ref", "--stdin"], settingsOf(ctx), commands);
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `stale refs under ${namespace} were not removed: ${error.message}` });
  }
}

/**
 * For destroy: the namespace refs whose commits are on a branch of the user's are removed; the
 * others (commits that reached no branch: a refused move, a tag, a stash, a detached HEAD) are
 * kept for the operator, and the runtime log says where. Then P goes, under the same lock: a
 * sync that comes after finds nothing to bring back.
 */
export function releasePrivateGit(ctx: GitSyncContext): void {
  withGitLock(ctx.paths, () => {
    releaseNamespace(ctx);
    rmSync(ctx.paths.state, { force: true });
    removeOwnedTree(ctx.paths.dir);
  });
}

function releaseNamespace(ctx: GitSyncContext): void {
  const namespace = namespaceOf(ctx.workspaceId);
  const git = (args: string[], input?: string) => gitCapture("/", ["--git-dir", ctx.user.commonDir, ...args], settingsOf(ctx), input).stdout;
  let refs: Map<string, string>;
  try {
    refs = refLines(git(["for-each-ref", "--format=%(objectname) %(refname)", `${namespace}/`]));
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: `the refs under ${namespace} were left as they are: ${error.message}` });
    return;
  }
  const merged = [...refs].filter(([, id]) => git(["for-each-ref", "--count=1", "--contains", id, "refs/heads"]).trim() !== "");
  if (merged.length > 0) git(["update-ref", "--stdin"], merged.map(([ref, id]) => `delete ${ref} ${id}\n`).join(""));
  const kept = [...refs.keys()].filter((ref) => !merged.some(([name]) => name === ref));
  if (kept.length > 0) logLine("info", "git-refs-kept", { workspaceId: ctx.workspaceId, refs: kept, reason: "their commits are on no branch of your repository; delete them with git update-ref -d when no longer wanted" });
}
