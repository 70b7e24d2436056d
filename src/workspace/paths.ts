/**
 * Where a workspace's owned storage lives, and confinement of workspace-relative paths.
 * Workspace ids are opaque: they reach the filesystem only through a hash.
 */
import { lstatSync, readlinkSync } from "node:fs";
import { closeDescriptor, openBeneath, openDirectory } from "../platform/directory.ts";
import { errnoOf, hasErrno, PATH_MISSING } from "../platform/errno.ts";
import { isAbsolute, join, relative, sep } from "node:path";
import { homeEntry } from "../store/home.ts";

/** `<home>/workspaces`: the only directory this runtime ever deletes things in. */
export function workspacesDir(home: string): string {
  return homeEntry(home, "workspaces");
}

/** A stable, path-safe name for a workspace id (sha256, 32 hex digits). */
export function workspaceKey(workspaceId: string): string {
  return new Bun.CryptoHasher("sha256").update(workspaceId).digest("hex").slice(0, 32);
}

/** `<home>/workspaces/<key>`: everything one workspace owns on disk. */
export function storageDir(home: string, workspaceId: string): string {
  return join(workspacesDir(home), workspaceKey(workspaceId));
}

/**
 * The checkout directory inside the storage directory: `<slug>-<short hash>`. Its basename
 * also names a worktree inside the user's repository, so it says what it is and stays unique.
 */
export function checkoutDir(home: string, workspaceId: string, slug: string | undefined): string {
  return join(storageDir(home, workspaceId), `${safeSlug(slug ?? workspaceId)}-${workspaceKey(workspaceId).slice(0, 8)}`);
}

/** A slug reduced to [A-Za-z0-9._-], at most 48 characters, never empty or dot-leading. */
function safeSlug(slug: string): string {
  const cleaned = slug
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[.-]+/, "")
    .slice(0, 48)
    .replace(/[.-]+$/, "");
  return cleaned === "" ? "workspace" : cleaned;
}

/** True when `path` is strictly inside `dir` (both already absolute and normalized). */
export function isInside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== "" && !rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel);
}

/**
 * Checks the shape of a workspace-relative path without touching the disk:
 * no NUL, not absolute, no `..` component. "" and "." mean the base itself.
 */
export function checkRelativePath(path: string, what: string): void {
  const problem = relativePathProblem(path, what);
  if (problem !== null) throw new Error(problem);
}

/** What checkRelativePath refuses `path` for, or null when its shape is fine. */
export function relativePathProblem(path: string, what: string): string | null {
  if (path.includes("\0")) return `${what} must not contain a NUL byte`;
  // The path is not repeated back: it comes from a request or an envelope (outside input).
  if (isAbsolute(path)) return `${what} must be relative to the workspace, got an absolute path`;
  if (path.split(/[\\/]+/).includes("..")) return `${what} must stay inside the workspace, got a path with a ".." component`;
  return null;
}

/**
 * `path` under `base` as a normalized absolute path: "" and "." are `base` itself.
 * Only after checkRelativePath.
 */
export function joinInside(base: string, path: string): string {
  const parts = path.split("/").filter((part) => part !== "" && part !== ".");
  return parts.length === 0 ? base : join(base, ...parts);
}

/**
 * Requires `path` to be a directory beneath `base` reached without any symlink, even one that
 * stays inside (checked by the kernel through a descriptor of `base`, see openInside).
 * Returns its absolute path.
 */
export function confine(base: string, path: string, what: string): string {
  checkRelativePath(path, what);
  const baseFd = openDirectory(base);
  try {
    closeDescriptor(openInside(baseFd, base, path, what));
  } finally {
    closeDescriptor(baseFd);
  }
  return joinInside(base, path);
}

/**
 * Opens the directory `path` beneath the open directory `baseFd` (whose path is `base`) without
 * following any symlink, and returns its descriptor: the directory checked is the directory
 * used, whatever is renamed afterwards. Throws a message naming the component at fault.
 */
export function openInside(baseFd: number, base: string, path: string, what: string): number {
  checkRelativePath(path, what);
  try {
    return openBeneath(baseFd, path);
  } catch (error) {
    throw new Error(`${what} ${JSON.stringify(path)} ${whyUnreachable(base, path, error as NodeJS.ErrnoException)}`);
  }
}

/**
 * Why `path` under `base` could not be opened, found by looking at each component (for the
 * message only: the decision was the kernel's, and what we see now may already differ).
 */
function whyUnreachable(base: string, path: string, error: NodeJS.ErrnoException): string {
  const parts = path.split("/").filter((part) => part !== "" && part !== ".");
  try {
    for (let i = 1; i <= parts.length; i++) {
      const prefix = parts.slice(0, i).join("/");
      const stat = lstatSync(join(base, prefix), { throwIfNoEntry: false });
      if (!stat) return `does not exist in ${base}`;
      if (stat.isSymbolicLink()) {
        const link = i === parts.length ? "is a symlink" : `goes through the symlink ${JSON.stringify(prefix)}`;
        return `${link} (to ${readlinkSync(join(base, prefix))}) in ${base}: symlinks are refused, even ones that stay inside the workspace`;
      }
      if (!stat.isDirectory()) return i === parts.length ? `is not a directory in ${base}` : `goes through ${JSON.stringify(prefix)}, which is not a directory, in ${base}`;
    }
  } catch (error) {
    // Changed while we looked (gone, or no longer a symlink to read): the kernel's answer below is all there is.
    if (!hasErrno(error, [...PATH_MISSING, "EINVAL", "ELOOP"])) throw error;
  }
  const code = errnoOf(error) ?? error.message;
  if (code === "ELOOP" || code === "ENOTDIR") return `cannot be opened in ${base} without following a symlink (${code}); it is being changed right now`;
  return `cannot be opened in ${base}: ${code}`;
}
