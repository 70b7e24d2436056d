/**
 * What the git bridge of a sandboxed workspace keeps of its own beside the private git dir (P,
 * private-git.ts): the state file (what the workspace and the user's repository last agreed,
 * and whether the last sync out failed), the lock that serializes the syncs and destroy, and
 * the reads every step shares (P's refs through the jail, the user's refs, ref names as git
 * accepts them). Nothing here reads a file of P: only the state file and lock, which are the
 * runtime's, and P's refs as a jailed git prints them.
 */
import { OBJECT_ID } from "../../workspace/repo.ts";
import { closeSync, existsSync, lstatSync, openSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { logLine } from "../../log/runtime-log.ts";
import { hasErrno, PATH_MISSING, tolerating } from "../../platform/errno.ts";
import { tryLockExclusive } from "../../platform/libc/locks.ts";
import type { GitSettings } from "../../workspace/git-environment.ts";
import { gitCapture } from "../../workspace/git.ts";
import { runInJail } from "./jail.ts";
import { workspaceKey } from "../../workspace/paths.ts";
import { privateGitPaths, readHead, type PrivateGitPaths, type UserGit } from "./private-git.ts";

/** One workspace's git, as the syncs see it. */
export interface GitSyncContext {
  workspaceId: string;
  user: UserGit;
  paths: PrivateGitPaths;
  /** options.gitTimeoutMs: the bound on each host git command of a sync (a jailed step has JAIL_STEP_MS). */
  timeoutMs: number;
}

/** Why the last sync out did not bring everything the workload made into the user's repository. */
export interface SyncProblem {
  /** ISO time of the first failure of this run of failures. */
  since: string;
  message: string;
}

export interface SyncState {
  version: 1;
  /** Per ref the syncs carry (SYNCED): the value the workspace and the user's repository last agreed on. */
  base: Record<string, string>;
  /** P's HEAD as the runtime last wrote it (`ref: refs/heads/x` or a commit id). */
  head: string;
  /** The user's side when it was last written into P (null: never). */
  user: UserSide | null;
  /** A digest of P's refs and HEAD as the last complete sync out saw them. */
  seen: string;
  /** refStorageOf(P) taken just before the last complete sync out read P's refs ("" when unknown). */
  storage?: string;
  /** The refs kept under the namespace (names in P), each with the value fetched there. */
  published: Record<string, string>;
  /** The user's submodule paths, from their index. */
  submodules: string[];
  /** fileIdentity of the user's index when `submodules` was read from it. */
  submodulesOf?: string;
  /** fileIdentity of P's index when the runtime last wrote it or saw it agree ("": never). */
  privateIndex?: string;
  /** Set while syncs out fail (cleared by the next one that completes). */
  problem?: SyncProblem | null;
  /** How many changed refs the last sync out left in P for a later one (PUBLISH_CAP). */
  pending?: number;
}

/** What of the user's repository a sync copies, each part as a comparable text. */
export interface UserSide {
  refs: string;
  head: string;
  index: string;
  shallow: string;
}

/**
 * The bound on a jailed read or copy of P: they are quick whatever P's size, and what runs there
 * is the workload's (an alternates file made a FIFO would wait for ever), so not options.gitTimeoutMs.
 */
const JAIL_STEP_MS = 30_000;

export function jailBound(ctx: GitSyncContext): number {
  return Math.min(ctx.timeoutMs, JAIL_STEP_MS);
}

export function settingsOf(ctx: GitSyncContext, protocols: string[] = []): GitSettings {
  return { policy: { protocols, timeoutMs: ctx.timeoutMs } };
}

/** The namespace of this workspace's refs in the user's repository. */
export function namespaceOf(workspaceId: string): string {
  return `refs/paseo-host-runtime/workspaces/${workspaceKey(workspaceId)}`;
}

/** host git on the user's common git dir, with the sync's bound; throws GitError. */
export function userGit(ctx: GitSyncContext, args: string[], input?: string, protocols: string[] = []): string {
  return gitCapture("/", ["--git-dir", ctx.user.commonDir, ...args], settingsOf(ctx, protocols), input).stdout;
}

/**
 * A ref name as git itself would accept one (check-ref-format), under refs/: what P reports is
 * the workload's word, and it becomes an argument of the user's git.
 */
export function validRefName(name: string): boolean {
  if (!name.startsWith("refs/") || name.endsWith("/") || name.endsWith(".") || name.includes("..") || name.includes("@{") || name.includes("//")) return false;
  // Control characters, space, and what git's ref syntax reserves.
  if (/[\u0000-\u0020\u007f~^:?*[\\]/.test(name)) return false;
  return name.split("/").every((part) => part !== "" && !part.startsWith(".") && !part.endsWith(".lock"));
}

/** `<id> <ref>` lines as a map; a line of another shape (never one git prints) is skipped. */
export function refLines(text: string): Map<string, string> {
  const refs = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const space = line.indexOf(" ");
    const [id, name] = [line.slice(0, space), line.slice(space + 1)];
    if (OBJECT_ID.test(id) && validRefName(name)) refs.set(name, id);
  }
  return refs;
}

/** Identity of a file as a text that changes whenever git rewrites it ("none" when missing); never opens it. */
export function fileIdentity(path: string): string {
  const stat = lstatSync(path, { bigint: true, throwIfNoEntry: false });
  return stat ? `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}` : "none";
}

export function digest(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}

/** The user's refs and the parts of their checkout a sync copies. */
export function userSide(ctx: GitSyncContext): { side: UserSide; refs: Map<string, string> } {
  const { user } = ctx;
  const listed = userGit(ctx, ["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags", "refs/remotes"]);
  const side = { refs: digest(listed), head: readHead(user.gitDir), index: fileIdentity(join(user.gitDir, "index")), shallow: fileIdentity(join(user.commonDir, "shallow")) };
  return { side, refs: refLines(listed) };
}

/** P's refs and HEAD as a jailed git read them. */
export interface PrivateSide {
  refs: Map<string, string>;
  /** `ref: refs/heads/x`, a commit id (detached), or "" when git could not say. */
  head: string;
  digest: string;
}

/** P's refs and HEAD, read in the jail; null (and why, in the log) when the jail could not tell. */
export function privateSide(ctx: GitSyncContext): PrivateSide | null {
  const read = readPrivateSide(ctx);
  if (typeof read === "string") {
    logLine("error", "git-error", { workspaceId: ctx.workspaceId, message: read });
    return null;
  }
  return read;
}

/** privateSide, or what stopped it (for callers that must not go on without it). */
export function readPrivateSide(ctx: GitSyncContext): PrivateSide | string {
  // A ref listing git could not finish is no listing: read as "no refs", it would unpublish the workspace's kept commits.
  const script = `git --git-dir="$1" for-each-ref --format='%(objectname) %(refname)' || exit 1; printf 'HEAD '; git --git-dir="$1" symbolic-ref -q HEAD || git --git-dir="$1" rev-parse -q --verify HEAD || echo`;
  const read = runInJail(ctx.user, ctx.paths, ["/bin/sh", "-c", script, "sh", ctx.paths.dir], jailBound(ctx));
  if (!read.ok) return `cannot read the workspace's private git directory ${ctx.paths.dir}: ${read.problem}`;
  const headLine = read.stdout.split("\n").find((line) => line.startsWith("HEAD ")) ?? "HEAD ";
  const target = headLine.slice(5).trim();
  const head = OBJECT_ID.test(target) ? target : validRefName(target) ? `ref: ${target}` : "";
  return { refs: refLines(read.stdout), head, digest: digest(read.stdout) };
}

export function readState(paths: PrivateGitPaths): SyncState {
  const state = JSON.parse(readFileSync(paths.state, "utf8")) as Omit<SyncState, "published"> & { published: Record<string, string> | string[] };
  // A state file of before the values were kept: those refs are fetched again by the next sync out.
  const published = Array.isArray(state.published) ? Object.fromEntries(state.published.map((ref) => [ref, ""])) : state.published;
  return { ...state, published };
}

export function writeState(paths: PrivateGitPaths, state: SyncState): void {
  const temporary = `${paths.state}.${process.pid}`;
  writeFileSync(temporary, JSON.stringify(state), { mode: 0o600 });
  renameSync(temporary, paths.state);
}

/** The recorded sync problem of workspace `workspaceId`'s private git dir, for ls, ps and doctor (null: none, or no private git dir). */
export function syncProblemOf(home: string, workspaceId: string): SyncProblem | null {
  const paths = privateGitPaths(home, workspaceId);
  const text = tolerating(PATH_MISSING, null, () => readFileSync(paths.state, "utf8"));
  if (text === null) return null;
  try {
    const state = JSON.parse(text) as Partial<SyncState>;
    return state.problem ?? null;
  } catch (error) {
    // Cut short by a full disk while written (writeState renames, so only a file of before that): say so, never throw at ls.
    if (!(error instanceof SyntaxError)) throw error;
    return { since: "", message: `its state file ${paths.state} cannot be read (${error.message})` };
  }
}

/** The git lock of a workspace was held longer than the caller could wait. */
export class GitLockBusy extends Error {
  override name = "GitLockBusy";
}

/**
 * Runs `fn` holding this workspace's git lock (a flock beside P): one sync at a time, and
 * destroy waits for a sync under way, at most `waitMs` (then GitLockBusy). Null when the
 * workspace's storage is gone (its destroy finished).
 */
export function withGitLock<T>(paths: PrivateGitPaths, waitMs: number, fn: () => T): T | null {
  if (!existsSync(paths.storage)) return null;
  let fd: number;
  try {
    fd = openSync(paths.lock, "a", 0o600);
  } catch (error) {
    // The storage went between the look and the open: a destroy finished.
    if (hasErrno(error, ["ENOENT"])) return null;
    throw error;
  }
  try {
    const deadline = Date.now() + waitMs;
    for (let pause = 1; !tryLockExclusive(fd); pause = Math.min(pause * 2, 50)) {
      if (Date.now() >= deadline) throw new GitLockBusy(`the git lock ${paths.lock} of the workspace was held for more than ${waitMs} ms (a sync of its git still running)`);
      Bun.sleepSync(pause);
    }
    return existsSync(paths.storage) ? fn() : null;
  } finally {
    closeSync(fd);
  }
}
