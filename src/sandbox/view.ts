/**
 * What a sandboxed workload sees of the host: the system directories, the workspace root, the
 * operator's paths read-only or read-write, the directories it never sees (the runtime's home),
 * and the overlays that keep the user's git directories from it. The mount plan (mount-plan.ts)
 * and the Seatbelt profile (seatbelt.ts) are made from a view; workspace-view.ts builds one for a
 * workspace.
 */
import { sep } from "node:path";
import { realPathIfResolvable } from "../platform/lookup.ts";
import type { Network } from "./settings.ts";

/** What the workload sees of the host besides the system directories. */
export interface SandboxView {
  /** The workspace root: bound read-write at its own path from the checked descriptor SANDBOX_FDS.root (null: none, for the probe). */
  root: string | null;
  /** Host directories or files visible read-write at the same path. */
  readWrite: string[];
  /** Host directories or files visible read-only at the same path. */
  readOnly: string[];
  network: Network;
  /**
   * Host directories the view never shows (the runtime's home: its store and every workspace's
   * storage), whatever path of the view contains them: an empty tmpfs lies over each place one
   * would appear, and over each path of the view inside one, except the root and what lies in
   * it (a worktree's checkout is in the home). Deeper paths, and the overlays, are bound after.
   */
  hidden?: string[];
  /**
   * Binds made after every other mount, in order, so that nothing above lies over them: a host
   * path (`source`) shown at `target` (the same path, or another one). What keeps the user's git
   * directories from the workload (git/private-git.ts).
   */
  overlays?: Overlay[];
}

/** A launch as Bun.spawn takes it: the file to execute, argv (argv[0] passed as is) and env: what
 * launch.ts puts in the sandbox, and whose files filesToShow shows. */
export interface Launch {
  program: string;
  argv: string[];
  env: Record<string, string>;
}

/** One bind of SandboxView.overlays. */
export interface Overlay {
  source: string;
  target: string;
  writable: boolean;
}

/** The directories every sandbox sees read-only (or, for /bin and the like, as symlinks into /usr). */
export const SYSTEM_DIRECTORIES = ["/usr", "/etc"] as const;
export const USR_LINKS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] as const;

/** True when `path` is one of `directories` or lies beneath one. */
export function covered(path: string, directories: readonly string[]): boolean {
  return directories.some((dir) => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep));
}

/**
 * Files the launch needs that the view does not already show, read-only: the program and
 * what it resolves to, and any other file named (a JavaScript helper, this runtime binary).
 * A path below one shown earlier in `files` is not shown again (a directory comes first).
 */
export function filesToShow(files: readonly string[], view: SandboxView): string[] {
  const visible = [...SYSTEM_DIRECTORIES, ...USR_LINKS, ...(view.root === null ? [] : [view.root]), ...view.readWrite, ...view.readOnly, ...overlaidInPlace(view)];
  const out: string[] = [];
  for (const file of files) {
    for (const path of [file, realPathIfResolvable(file)]) {
      if (path !== null && !covered(path, [...visible, ...out])) out.push(path);
    }
  }
  return out;
}

/** Overlays shown at their own path (what a launch may find there). */
function overlaidInPlace(view: SandboxView): string[] {
  return (view.overlays ?? []).filter((overlay) => overlay.source === overlay.target).map((overlay) => overlay.source);
}

/**
 * True when the view shows `path` (or a directory above it) at that path: the system
 * directories (and /dev, /proc of its own), the root, the view's paths.
 */
export function shownInView(path: string, view: Pick<SandboxView, "root" | "readWrite" | "readOnly">): boolean {
  return covered(path, [...SYSTEM_DIRECTORIES, ...USR_LINKS, "/dev", "/proc", ...(view.root === null ? [] : [view.root]), ...view.readWrite, ...view.readOnly]);
}

/**
 * Every place in the sandbox where the view shows host directory `dir` or a part of it, as a
 * bind that would lie over it there: below a path of the view that shows it (compared as
 * resolved on the host, since bwrap follows a symbolic link in a source, so `dir` appears
 * under the path the view names), and each path of the view that lies inside it.
 */
export function placesInView(dir: string, view: SandboxView): { source: string; target: string }[] {
  const real = realPathIfResolvable(dir) ?? dir;
  const places = new Map<string, { source: string; target: string }>();
  for (const shown of [...SYSTEM_DIRECTORIES, ...(view.root === null ? [] : [view.root]), ...view.readWrite, ...view.readOnly]) {
    const source = realPathIfResolvable(shown) ?? shown;
    if (covered(real, [source])) places.set(shown + real.slice(source.length), { source: dir, target: shown + real.slice(source.length) });
    else if (covered(source, [real])) places.set(shown, { source: shown, target: shown });
  }
  return [...places.values()];
}
