/**
 * Proving that a workspace's root is still the directory its create made, before anything
 * uses it. A workload runs as the daemon's user and may rename, delete or replace anything in
 * its workspace, the root included: every exec (the helper's too), inspect, resume and destroy
 * goes through openRoot, which opens the root by descriptor and compares it with what was
 * recorded, so nothing ever runs in, reports on or deletes the target of a planted symlink.
 *
 * What is recorded (store Confinement): the device:inode of the root, and of the owned
 * checkout it lies in (copy, clone, worktree), and for a worktree the registration
 * `<commonDir>/worktrees/<name>` its `.git` file names, which is what makes it ours.
 */
import { lstatSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { closeDescriptor, identityOf, openBeneath, openDirectory, pathOfDescriptor, readSmallFileBeneath } from "../platform/directory.ts";
import { errnoOf, hasErrno, PATH_MISSING, tolerating } from "../platform/errno.ts";
import { realPathOrNull } from "../platform/lookup.ts";
import type { Confinement, WorkspaceRecord } from "../store/workspaces.ts";
import { isInside } from "./paths.ts";

/** Why a root cannot be used; the message reads after "workspace W ". */
export class RootProblem extends Error {}

/** A root proven to be the workspace's: the caller closes `fd`. */
export interface OpenRoot {
  path: string;
  fd: number;
  /** What was found, in the recorded form (recorded for a workspace that had none yet). */
  seen: Confinement;
}

/** The fields of a record that locate its root. */
type RootRecord = Pick<WorkspaceRecord, "kind" | "root" | "details" | "confinement">;

/** The largest `.git` file we read: git writes one line. */
const GIT_FILE_MAX = 4096;

/**
 * Opens the root of `record` and proves it is the directory created: the checkout (or an
 * adopted root) opened without following a symlink at its last component and matching its
 * recorded identity, the root reached from it without any symlink and matching too, and a
 * worktree's `.git` still naming our registration. A record without identities (made before
 * schema 2, or being created now) must instead be reached through no symlink at all, and a
 * worktree's `.git` and registration must point at each other. Throws RootProblem.
 */
export function openRoot(record: RootRecord): OpenRoot {
  const root = record.root;
  if (root === null) throw new RootProblem("has no root recorded");
  const checkout = ownedCheckout(record);
  const anchor = checkout ?? root;
  const label = anchor === root ? `root ${root}` : `${record.kind === "worktree" ? "worktree" : "checkout"} ${checkout}`;
  const expected = record.confinement;
  const anchorFd = openAnchor(anchor, label);
  let rootFd = -1;
  let kept = -1;
  try {
    requireAnchor(anchorFd, anchor, label, checkout === null ? expected?.root : expected?.checkout);
    const gitdir = record.kind === "worktree" ? requireOurWorktree(anchorFd, anchor, record, expected?.gitdir) : null;
    rootFd = anchor === root ? anchorFd : openRootBeneath(anchorFd, anchor, root);
    if (expected && rootFd !== anchorFd) requireIdentity(rootFd, expected.root, `root ${root}`);
    const seen = { root: identityOf(rootFd), checkout: checkout === null ? null : identityOf(anchorFd), gitdir };
    kept = rootFd;
    return { path: root, fd: rootFd, seen };
  } finally {
    if (anchorFd !== kept) closeDescriptor(anchorFd);
    if (rootFd >= 0 && rootFd !== anchorFd && rootFd !== kept) closeDescriptor(rootFd);
  }
}

/** openRoot's verdict alone: null when usable, else why not. */
export function rootProblem(record: RootRecord): string | null {
  try {
    closeDescriptor(openRoot(record).fd);
    return null;
  } catch (error) {
    if (error instanceof RootProblem) return error.message;
    throw error;
  }
}

/**
 * For destroy, before git is asked to remove a worktree: git resolves the path it is given, and
 * we do not rely on its own checks to stay away from whatever a planted symlink points at.
 * Null when the checkout is missing or provably ours, else why it is not.
 */
export function worktreeProblem(record: RootRecord): string | null {
  const { checkout, commonDir } = record.details;
  if (checkout === undefined || commonDir === undefined || lstatSync(checkout, { throwIfNoEntry: false }) === undefined) return null;
  const label = `worktree ${checkout}`;
  try {
    const fd = openAnchor(checkout, label);
    try {
      requireAnchor(fd, checkout, label, record.confinement?.checkout);
      requireOurWorktree(fd, checkout, record, record.confinement?.gitdir);
    } finally {
      closeDescriptor(fd);
    }
    return null;
  } catch (error) {
    if (error instanceof RootProblem) return error.message;
    throw error;
  }
}

/** True when `seen` is what `recorded` says (nothing to record again). */
export function sameConfinement(recorded: Confinement | null, seen: Confinement): boolean {
  return recorded !== null && recorded.root === seen.root && recorded.checkout === seen.checkout && recorded.gitdir === seen.gitdir;
}

/** What to record at the end of a create: the identities of what it made, proven as above. */
export function captureConfinement(record: Omit<RootRecord, "confinement">): Confinement {
  const opened = openRoot({ ...record, confinement: null });
  closeDescriptor(opened.fd);
  return opened.seen;
}

/** The owned directory the root lies in (copy, clone, worktree), or null for an adopted root. */
function ownedCheckout(record: RootRecord): string | null {
  const checkout = record.details.checkout;
  if (record.kind === "adopted" || checkout === undefined || record.root === null) return null;
  return checkout === record.root || isInside(checkout, record.root) ? checkout : null;
}

function openAnchor(path: string, label: string): number {
  try {
    return openDirectory(path);
  } catch (error) {
    throw new RootProblem(whyNotDirectory(path, label, error as NodeJS.ErrnoException));
  }
}

/** The directory at `path` could not be opened: say what is there instead. */
function whyNotDirectory(path: string, label: string, error: NodeJS.ErrnoException): string {
  let stat;
  try {
    stat = lstatSync(path);
  } catch (lstatError) {
    if (hasErrno(lstatError, PATH_MISSING)) return `${label} no longer exists (removed outside paseo-host-runtime; destroy and create the workspace again)`;
    return `${label} cannot be examined: ${(lstatError as Error).message}`;
  }
  if (stat.isSymbolicLink()) return `${label} was replaced by a symlink (to ${readlinkSync(path)}); it is no longer the directory this workspace was created with`;
  if (!stat.isDirectory()) return `${label} is not a directory`;
  return `${label} cannot be opened: ${error.message}`;
}

/** The anchor opened is the recorded directory; without a record, reached through no symlink. */
function requireAnchor(fd: number, path: string, label: string, identity: string | undefined | null): void {
  if (!identity) return requireNoSymlink(fd, path, label);
  const found = identityOf(fd);
  if (found === identity) return;
  // Device numbers may change across reboots (NVMe and device-mapper minors are assigned at
  // boot); the inode cannot. Same inode, path reached through no symlink: renumbered, not replaced.
  if (inodeOf(found) === inodeOf(identity) && reachedWithoutSymlinks(fd, path)) return;
  throw replaced(label, identity, found);
}

/** Below a proven anchor, without symlinks: only the inode must match (the device is the anchor's). */
function requireIdentity(fd: number, expected: string, label: string): void {
  const found = identityOf(fd);
  if (found !== expected && inodeOf(found) !== inodeOf(expected)) throw replaced(label, expected, found);
}

function requireNoSymlink(fd: number, path: string, label: string): void {
  const real = pathOfDescriptor(fd) ?? realpathSync(path);
  if (real !== path) throw new RootProblem(`${label} is reached through a symlink (it is now ${real}); it is not the directory this workspace was created with`);
}

function reachedWithoutSymlinks(fd: number, path: string): boolean {
  return (pathOfDescriptor(fd) ?? realpathSync(path)) === path;
}

function inodeOf(identity: string): string {
  return identity.slice(identity.indexOf(":") + 1);
}

function replaced(label: string, expected: string, found: string): RootProblem {
  return new RootProblem(`${label} was replaced: it is another directory than the one this workspace was created with (device:inode ${expected}, now ${found})`);
}

function openRootBeneath(checkoutFd: number, checkout: string, root: string): number {
  try {
    return openBeneath(checkoutFd, relative(checkout, root));
  } catch (error) {
    const code = errnoOf(error);
    const why = code === "ENOENT" ? "it no longer exists" : code === "ELOOP" || code === "ENOTDIR" ? "a symlink or a file replaced it or a directory on the way" : (error as Error).message;
    throw new RootProblem(`root ${root} is no longer reached from ${checkout} without symlinks: ${why}`);
  }
}

/**
 * The worktree's `.git` file (read beneath the checkout's descriptor, never through a symlink)
 * names our registration. Returns that registration path.
 */
function requireOurWorktree(checkoutFd: number, checkout: string, record: RootRecord, expected: string | null | undefined): string {
  const text = readSmallFileBeneath(checkoutFd, ".git", GIT_FILE_MAX);
  const named = text === null ? null : /^gitdir: (.+)$/m.exec(text)?.[1]?.trim();
  const gitdir = named ? resolve(checkout, named) : null;
  const notOurs = (why: string) => new RootProblem(`worktree ${checkout} is no longer ours: ${why}`);
  if (gitdir === null) throw notOurs("its .git file is missing or is not a regular file naming a registration");
  if (expected) {
    if (gitdir !== expected) throw notOurs(`its .git names ${gitdir}, not our registration ${expected}`);
    return gitdir;
  }
  const commonDir = record.details.commonDir;
  if (!commonDir || !sameDirectory(dirname(gitdir), join(commonDir, "worktrees"))) throw notOurs(`its .git names ${gitdir}, outside ${commonDir ?? "its repository"}/worktrees`);
  if (registrationTarget(gitdir) !== join(checkout, ".git")) throw notOurs(`the registration ${gitdir} its .git names does not point back at it`);
  return gitdir;
}

/** Where a registration's `gitdir` file points (absolute), or null. */
function registrationTarget(registration: string): string | null {
  const text = tolerating(PATH_MISSING, null, () => readFileSync(join(registration, "gitdir"), "utf8"));
  return text === null ? null : resolve(registration, text.trim());
}

function sameDirectory(a: string, b: string): boolean {
  if (a === b) return true;
  const real = realPathOrNull(a);
  return real !== null && real === realPathOrNull(b);
}
