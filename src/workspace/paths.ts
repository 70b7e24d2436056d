/**
 * Where a workspace's owned storage lives, and confinement of workspace-relative paths.
 * Workspace ids are opaque: they reach the filesystem only through a hash.
 */
import { realpathSync, statSync } from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";

/** `<home>/workspaces`: the only directory this runtime ever deletes things in. */
export function workspacesDir(home: string): string {
  return join(home, "workspaces");
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
export function safeSlug(slug: string): string {
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
  if (path.includes("\0")) throw new Error(`${what} must not contain a NUL byte`);
  if (isAbsolute(path)) throw new Error(`${what} must be relative to the workspace, got the absolute path ${JSON.stringify(path)}`);
  if (path.split(/[\\/]+/).includes("..")) throw new Error(`${what} must stay inside the workspace, got ${JSON.stringify(path)} (contains "..")`);
}

/**
 * Resolves `path` under `base` (real paths, symlinks followed) and requires the result to be a
 * directory that is `base` itself or inside it. Returns the real path.
 */
export function confine(base: string, path: string, what: string): string {
  checkRelativePath(path, what);
  const realBase = realpathSync(base);
  let real: string;
  try {
    real = realpathSync(join(realBase, path));
  } catch {
    throw new Error(`${what} ${JSON.stringify(path)} does not exist in ${realBase}`);
  }
  if (real !== realBase && !isInside(realBase, real)) {
    throw new Error(`${what} ${JSON.stringify(path)} resolves to ${real}, outside ${realBase} (a symlink escapes it)`);
  }
  if (!statSync(real).isDirectory()) throw new Error(`${what} ${JSON.stringify(path)} is not a directory in ${realBase}`);
  return real;
}
