/**
 * After each sandboxed exec, before its `exit` is written (syncOut): every branch, tag and stash
 * the workload changed in the private git dir (P), and a detached HEAD, are fetched into the
 * user's repository under refs/paseo-host-runtime/workspaces/<key>/, where the operator sees
 * them; then the branch policy (branch-policy.ts) moves the user's branches it may.
 *
 * Bounded whatever the workload made: one fetch, one listing and one ref transaction per sync,
 * at most PUBLISH_CAP refs fetched per sync (the rest stay in P, are counted in the state file
 * and the log, and go with the next sync, or with destroy). A sync that fails is recorded in
 * the state file (ls, ps and doctor show it) and retried before the next exec and at destroy.
 */
import { lstatSync, mkdirSync, opendirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { logLine } from "../../log/runtime-log.ts";
import { hasErrno, PATH_MISSING } from "../../platform/errno.ts";
import { moveBranches } from "./branch-policy.ts";
import { GitError } from "../../workspace/git.ts";
import { uploadPackCommand } from "./jail.ts";
import { OBJECT_ID } from "../../workspace/repo.ts";
import { namespaceOf, readPrivateSide, readState, userGit, withGitLock, writeState, type GitSyncContext, type PrivateSide, type SyncState } from "./sync-state.ts";
import { removeOwnedTree } from "../../workspace/owned-tree.ts";
import { hasPrivateGit } from "./private-git.ts";

/** The refs of P brought into the user's repository's namespace when the workload changed them. */
export const PUBLISHED = /^refs\/(heads\/|tags\/|stash$)/;

/** At most this many refs are fetched by one sync out; the others wait in P for the next. */
export const PUBLISH_CAP = 1000;

/**
 * After a sandboxed exec, before its `exit`: brings what the workload changed in P into the
 * user's repository (see the top of the file). Problems are the state file's and the runtime
 * log's: the exec's own outcome stands.
 */
export function syncOut(ctx: GitSyncContext): void {
  withGitLock(ctx.paths, ctx.timeoutMs, () => {
    if (!hasPrivateGit(ctx.paths)) return;
    const state = readState(ctx.paths);
    const next = publishChanges(ctx, state);
    if (next !== state) writeState(ctx.paths, next);
  });
}

/** The refs of P a sync out publishes now: what the workload changed that is not at the namespace with that value yet (branches first). */
export function refsToPublish(found: PrivateSide, state: SyncState): string[] {
  const changed = [...found.refs].filter(([ref, value]) => PUBLISHED.test(ref) && value !== state.base[ref] && value !== state.published[ref]).map(([ref]) => ref);
  const head = OBJECT_ID.test(found.head) && state.published.HEAD !== found.head ? ["HEAD"] : [];
  const branches = changed.filter((ref) => ref.startsWith("refs/heads/")).sort();
  return [...branches, ...head, ...changed.filter((ref) => !ref.startsWith("refs/heads/")).sort()];
}

/** A ref's value in P as `found` read it ("HEAD": the detached HEAD's commit). */
export function valueIn(found: PrivateSide, ref: string): string {
  return ref === "HEAD" ? found.head : found.refs.get(ref)!;
}

/** Under the git lock: one sync out of `state`; returns the next state (the same object when nothing changed). */
export function publishChanges(ctx: GitSyncContext, state: SyncState): SyncState {
  const retrying = Boolean(state.problem || state.pending);
  // Taken before P is read: a change made while it is read shows next time.
  const storage = refStorageOf(ctx.paths.dir);
  if (!retrying && storage !== "" && storage === state.storage) return state;
  const found = readPrivateSide(ctx);
  if (typeof found === "string") return failed(ctx, state, found);
  if (!retrying && found.digest === state.seen) return { ...state, storage };
  const wanted = refsToPublish(found, state);
  const batch = wanted.slice(0, PUBLISH_CAP);
  const pending = wanted.length - batch.length;
  if (batch.length > 0) {
    const problem = fetchObjects(ctx, batch.map((ref) => valueIn(found, ref)));
    if (problem !== null) return failed(ctx, state, problem);
  }
  const next: SyncState = { ...state, base: { ...state.base } };
  let published: Record<string, string>;
  try {
    published = placeRefs(ctx, found, batch, next);
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    return failed(ctx, state, `the workspace's refs were not written into ${ctx.user.commonDir}: ${error.message}`);
  }
  if (pending > 0) {
    logLine("warn", "git-sync-pending", { workspaceId: ctx.workspaceId, published: batch.length, pending, reason: `the workload changed more than ${PUBLISH_CAP} refs: the others stay in the workspace's git directory and come with the next sync (before the next exec, or at destroy)` });
  }
  // A sync with refs left for later reads P again next time, whatever P's storage says.
  return { ...next, published, seen: pending > 0 ? "" : found.digest, storage: pending > 0 ? "" : storage, problem: null, pending };
}

/**
 * With the objects of `batch` in the user's repository: the branch policy moves the branches it
 * may (the batch's, and those kept at the namespace before, whose reasons may have gone), and
 * the rest of the batch goes to the namespace, in one transaction that also removes the
 * namespace refs no longer needed (a branch moved, a ref the workload put back or deleted).
 * Returns the refs now at the namespace.
 */
function placeRefs(ctx: GitSyncContext, found: PrivateSide, batch: readonly string[], next: SyncState): Record<string, string> {
  const before = next.published;
  const kept = Object.keys(before).filter((ref) => ref.startsWith("refs/heads/") && before[ref] === found.refs.get(ref));
  const branches = [...new Set([...batch.filter((ref) => ref.startsWith("refs/heads/")), ...kept])].sort();
  const moved = new Set(moveBranches(ctx, branches, next, Object.fromEntries(branches.map((ref) => [ref, found.refs.get(ref)!]))));
  const namespace = namespaceOf(ctx.workspaceId);
  const published = { ...before };
  const lines: string[] = [];
  const inBatch = new Set(batch);
  for (const ref of batch) {
    if (moved.has(ref)) continue;
    published[ref] = valueIn(found, ref);
    lines.push(`update ${namespace}/${ref} ${published[ref]}\n`);
  }
  for (const ref of Object.keys(before)) {
    const gone = ref === "HEAD" ? found.head !== before.HEAD : !found.refs.has(ref) || found.refs.get(ref) === next.base[ref];
    if (moved.has(ref) || (!inBatch.has(ref) && gone)) {
      delete published[ref];
      lines.push(`delete ${namespace}/${ref}\n`);
    }
  }
  if (lines.length > 0) userGit(ctx, ["update-ref", "-m", `paseo-host-runtime: workspace ${ctx.workspaceId}`, "--stdin"], lines.join(""));
  return published;
}

/** Records a sync out that did not finish (kept until one does) and logs it. */
function failed(ctx: GitSyncContext, state: SyncState, message: string): SyncState {
  logLine("error", "git-error", { workspaceId: ctx.workspaceId, message });
  return { ...state, problem: { since: state.problem?.since ?? new Date().toISOString(), message } };
}

/** At most this many entries of P's ref storage are looked at; more, and P is always read. */
const STORAGE_ENTRIES = 4096;

/**
 * What git changes whenever it writes a ref of P: the identity, size and times of HEAD,
 * packed-refs and every entry under refs/ (and reftable/), looked at without following any
 * symlink. Only a hint that nothing changed (a ctime cannot be set back): "" when P is too
 * big to look at, or changed while looked at.
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
  } catch (error) {
    // Removed while looked at (ENOENT), or not what git makes (ENOTDIR: a FIFO in place of a directory): P is read.
    if (hasErrno(error, PATH_MISSING)) return "";
    throw error;
  }
}

/**
 * Fetches the objects of `values` (ref values read from P) into the user's repository, writing
 * no ref: the caller writes the refs it decided on. The runtime writes the values as the only
 * refs the jailed upload-pack advertises (jail.ts), each once, so the fetch asks for each
 * by its id, however many refs share it. Null when done, else what went wrong.
 */
export function fetchObjects(ctx: GitSyncContext, values: readonly string[]): string | null {
  const config = ["-c", "fetch.fsckObjects=true", "-c", "transfer.fsckObjects=true", "-c", "maintenance.auto=false", "-c", "gc.auto=0", "-c", "fetch.writeCommitGraph=false"];
  const distinct = [...new Set(values)].sort();
  try {
    const format = userGit(ctx, ["rev-parse", "--show-object-format"]).trim();
    const want = join(ctx.paths.out, "want");
    mkdirSync(want, { recursive: true, mode: 0o700 });
    writeFileSync(join(want, "packed-refs"), distinct.map((value, i) => `${value} refs/want/${String(i).padStart(8, "0")}\n`).join(""));
    writeFileSync(join(want, "HEAD"), "ref: refs/heads/paseo-host-runtime-none\n");
    const fetch = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--stdin", `--upload-pack=${uploadPackCommand(ctx.user, ctx.paths, format)}`, "--", ctx.paths.dir];
    userGit(ctx, [...config, ...fetch], distinct.map((value) => `${value}\n`).join(""), ["file"]);
    return null;
  } catch (error) {
    if (!(error instanceof GitError) && !hasErrno(error, ["ENOSPC", "EDQUOT", "EROFS", "EIO"])) throw error;
    const said = error instanceof GitError ? error.stderr.split("\n").filter((line) => line.trim() !== "").slice(0, 2).join(" | ") || `exit ${error.exitCode ?? "by signal"}` : (error as Error).message;
    // Its stderr, not its argv: the jail's command line would fill the line.
    return `the workspace's commits could not be brought into ${ctx.user.commonDir}: git fetch from ${ctx.paths.dir}: ${said}`;
  } finally {
    removeOwnedTree(ctx.paths.out);
  }
}
