/**
 * The private git directory of a sandboxed workspace (Linux). A sandboxed workload never sees
 * the user's git directories writable: inside the sandbox, its checkout's `.git` is a git
 * directory of the workspace's own (P, `<storage>/git`), whose objects are borrowed read-only
 * from the user's repository (objects/info/alternates names them at USER_OBJECTS) and whose
 * refs, HEAD and index the runtime writes from the user's (sync-in.ts). The user's common git
 * dir is never shown writable; where another path would show it, it is shown read-only.
 *
 * Nothing on the host runs git in P or reads a file of it: the runtime reads and writes P only
 * through git run inside a sandbox of its own (jail.ts), and what comes out of P is ref
 * values (checked) and a pack (fsck'd by the receiving git).
 */
import { OBJECT_ID } from "../../workspace/repo.ts";
import { existsSync, lstatSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, isAbsolute, join } from "node:path";
import { PATH_MISSING, tolerating } from "../../platform/errno.ts";
import type { Overlay } from "../view.ts";
import type { WorkspaceDetails, WorkspaceRecord } from "../../store/workspaces.ts";
import { gitCapture, gitRead } from "../../workspace/git.ts";
import type { GitSettings } from "../../workspace/git-environment.ts";
import { storageDir } from "../../workspace/paths.ts";
import { gitlinksOf, repoInfo } from "../../workspace/repo.ts";
import { removeOwnedTree } from "../../workspace/owned-tree.ts";

/** Where the user's objects directory is, inside every sandbox of a workspace with a private git dir (P's alternates name it). */
export const USER_OBJECTS = "/.paseo-git-objects";

/** The user's git directories a workspace's checkout belongs to: recorded by the runtime, never read from the checkout. */
export interface UserGit {
  /** The directory whose `.git` the checkout's git uses: the worktree checkout, or the adopted root. */
  top: string;
  /** The git dir that `.git` names: the worktree's registration, or the adopted repository's own git dir. */
  gitDir: string;
  /** The repository's common git dir (objects, refs, config). */
  commonDir: string;
  /** `<top>/.git` is the git dir itself (an ordinary repository) or a file naming it (a worktree). */
  dotGit: "directory" | "file";
}

/** A workspace's private git directory and the runtime's own files beside it (none of them shown to a workload but `dir`). */
export interface PrivateGitPaths {
  storage: string;
  /** P itself. */
  dir: string;
  /** The `.git` file shown over a worktree's own (`gitdir: P`). */
  link: string;
  /** What the runtime last agreed with P and the user's repository (sync-state.ts); written last, so its presence says P is complete. */
  state: string;
  /** Serializes the runtime's work on P and on the user's refs for this workspace. */
  lock: string;
  /** Where a fetch from P finds the copy of P's refs and objects it reads (jail.ts uploadPackCommand); never shown to a workload. */
  out: string;
}

export function privateGitPaths(home: string, workspaceId: string): PrivateGitPaths {
  const storage = storageDir(home, workspaceId);
  return { storage, dir: join(storage, "git"), link: join(storage, "git.link"), state: join(storage, "git-sync.json"), lock: join(storage, "git.lock"), out: join(storage, "git-out") };
}

/**
 * The user's git dirs of a worktree or adopted workspace (`gitdir`: the worktree registration its
 * root was proven to name), or null when its checkout has none of the user's (a clone's or
 * copy's git dir is its own, and so is a `.git` made in an adopted directory that had none at
 * create: the runtime never syncs with, nor runs host git in, a git dir the workload made).
 */
export function userGitOf(record: Pick<WorkspaceRecord, "kind" | "root" | "details">, gitdir: string | null): UserGit | null {
  const { checkout, commonDir, git } = record.details;
  if (record.kind === "worktree" && checkout && commonDir && gitdir) return { top: checkout, gitDir: gitdir, commonDir, dotGit: "file" };
  if (record.kind !== "adopted" || record.root === null) return null;
  const known = git === undefined ? legacyAdoptedGit(record.root) : git;
  return known ? { top: record.root, ...known } : null;
}

/**
 * An adopted directory recorded before the runtime kept its git dirs: its `.git` directory is
 * taken as the repository's (never a `commondir` inside it); a `.git` file is not followed, and
 * the sandbox shows it as an empty file (see untrustedDotGit). Decided once, at the first
 * sandboxed exec, before any workload of this runtime ran there, and recorded
 * (sandbox-git.ts): otherwise a `.git` a workload made later would be taken for the user's.
 */
export function legacyAdoptedGit(root: string): NonNullable<WorkspaceDetails["git"]> | null {
  const dotGit = join(root, ".git");
  const stat = lstatSync(dotGit, { throwIfNoEntry: false });
  if (stat?.isDirectory() && !existsSync(join(dotGit, "commondir"))) return { gitDir: dotGit, commonDir: dotGit, dotGit: "directory" };
  return null;
}

/** The `.git` of an adopted root whose git dirs are unknown and not taken on trust (a file): shown as an empty file. */
export function untrustedDotGit(record: Pick<WorkspaceRecord, "kind" | "root">): string | null {
  if (record.kind !== "adopted" || record.root === null) return null;
  const dotGit = join(record.root, ".git");
  return lstatSync(dotGit, { throwIfNoEntry: false })?.isFile() ? dotGit : null;
}

/**
 * The user's objects directory at USER_OBJECTS, and the absolute alternates it borrows from at
 * their own paths, all read-only: what P's alternates need.
 */
export function objectOverlays(user: UserGit): Overlay[] {
  const objects = join(user.commonDir, "objects");
  return [{ source: objects, target: USER_OBJECTS, writable: false }, ...alternatesOf(objects, 0).map((path) => ({ source: path, target: path, writable: false }))];
}

/** Absolute object directories `objects` borrows from (their own alternates too, as git follows them, 5 deep). */
function alternatesOf(objects: string, depth: number): string[] {
  if (depth >= 5) return [];
  // Most object directories borrow from none: no alternates file.
  const text = tolerating(PATH_MISSING, null, () => readFileSync(join(objects, "info", "alternates"), "utf8"));
  if (text === null) return [];
  const listed = text.split("\n").filter((line) => isAbsolute(line) && existsSync(line));
  return [...listed, ...listed.flatMap((path) => alternatesOf(path, depth + 1))];
}

/**
 * What a workload's sandbox binds last: P over the checkout's `.git` (or P at its own path and
 * a `.git` file naming it over a worktree's), the user's objects read-only, the user's git dirs
 * read-only wherever the rest of the view would show them (`places`: at every path, a symbolic
 * link's included, and over a view path inside one), and, in an adopted checkout, the
 * user's submodule paths held in place (submodulePins), since a git run in the checkout on the
 * host follows a submodule's `.git`.
 */
export function workloadOverlays(user: UserGit, paths: PrivateGitPaths, places: (dir: string) => { source: string; target: string }[], submodules: readonly string[]): Overlay[] {
  const dotGit = join(user.top, ".git");
  const overlays: Overlay[] = [];
  for (const dir of new Set([user.commonDir, user.gitDir])) {
    for (const place of places(dir)) if (place.target !== dotGit) overlays.push({ ...place, writable: false });
  }
  overlays.push(...submodulePins(user.top, submodules));
  if (user.dotGit === "directory") overlays.push({ source: paths.dir, target: dotGit, writable: true });
  else overlays.push({ source: paths.dir, target: paths.dir, writable: true }, { source: paths.link, target: dotGit, writable: false });
  // The user's submodule git dirs, read-only where the checkout's submodule `.git` files lead (git status recurses into them).
  const modules = join(user.commonDir, "modules");
  if (submodules.length > 0 && existsSync(modules)) overlays.push({ source: modules, target: join(user.dotGit === "directory" ? dotGit : paths.dir, "modules"), writable: false });
  return [...overlays, ...objectOverlays(user)];
}

/**
 * The user's submodule paths of an adopted checkout, shown read-only in place (a missing
 * directory is made empty, as git makes one for a submodule not checked out; a file on the way
 * is pinned instead: nothing can be made below it). The directories on the way are held by the
 * sandbox's anchors, and every pin is identity-checked inside (../mount-plan.ts keptInPlace).
 * A symbolic link on the way cannot be held (a mount follows it) and the workload could replace
 * it with a directory of its own: refused, naming the submodule.
 */
export function submodulePins(top: string, submodules: readonly string[]): Overlay[] {
  const pins = new Map<string, Overlay>();
  for (const path of submodules) {
    const parts = path.split("/");
    for (let depth = 1; depth <= parts.length; depth++) {
      const target = join(top, ...parts.slice(0, depth));
      let stat = lstatSync(target, { throwIfNoEntry: false });
      if (stat?.isSymbolicLink()) throw new Error(`the submodule path ${JSON.stringify(path)} of ${top} leads through a symbolic link (${target}): the sandbox cannot keep it from the workload; replace the link with a directory, or run this workspace without the sandbox`);
      if (stat === undefined) {
        mkdirSync(target);
        stat = lstatSync(target);
      }
      if (depth === parts.length || !stat.isDirectory()) {
        pins.set(target, { source: target, target, writable: false });
        break;
      }
    }
  }
  return [...pins.values()];
}

/**
 * An adopted directory below the top of a working tree (no git dirs of its own recorded): the
 * enclosing repository's submodule paths inside it, relative to it, for submodulePins. The
 * user's `git status` in that repository follows each one's `.git`, which the workload could
 * otherwise make. Found from the directory's parent and that repository's index, neither of
 * which the workload writes. A directory that is itself one of those submodules is refused: its
 * `.git` would be the workload's to make.
 */
export function enclosedSubmodules(root: string): string[] {
  const parent = dirname(root);
  // Every sandboxed exec asks: without a `.git` above, git would find no repository, and none is started.
  if (!hasDotGitAbove(parent)) return [];
  const info = repoInfo(parent);
  if (info === null) return [];
  const self = info.prefix === "" ? basename(root) : `${info.prefix}/${basename(root)}`;
  const listed = gitRead(parent, ["ls-files", "--stage", "-z", "--full-name", "--", `:(literal)${basename(root)}`]);
  const inside: string[] = [];
  for (const path of gitlinksOf(listed)) {
    if (path === self) throw new Error(`${root} is the submodule ${JSON.stringify(self)} of ${info.toplevel}: the sandbox cannot keep its .git, which your git in ${info.toplevel} follows, from the workload; create the workspace from the submodule once it is checked out, or run it without the sandbox`);
    if (path.startsWith(`${self}/`)) inside.push(path.slice(self.length + 1));
  }
  return inside;
}

/** Whether `dir` or a directory above it holds a `.git` (where git's discovery could find a working tree). */
function hasDotGitAbove(dir: string): boolean {
  for (let at = dir; ; at = dirname(at)) {
    if (lstatSync(join(at, ".git"), { throwIfNoEntry: false }) !== undefined) return true;
    if (at === dirname(at)) return false;
  }
}

/** Whether P was made completely (its state file is written last). */
export function hasPrivateGit(paths: PrivateGitPaths): boolean {
  return existsSync(paths.state);
}

/**
 * Makes P afresh (anything left of an unfinished one first removed): its skeleton, HEAD as the
 * user's, a config of the repository's own settings, and alternates naming USER_OBJECTS. Its
 * refs, index and shallow file come with the first sync (sync-in.ts), which also writes the
 * state file. Nothing here reads a file a workload could have written.
 */
export function makePrivateGit(user: UserGit, paths: PrivateGitPaths, settings: GitSettings): void {
  removeOwnedTree(paths.dir);
  for (const dir of ["objects/info", "objects/pack", "refs/heads", "refs/tags", "info"]) mkdirSync(join(paths.dir, dir), { recursive: true, mode: 0o700 });
  writeFileSync(join(paths.dir, "HEAD"), `${readHead(user.gitDir)}\n`);
  writeFileSync(join(paths.dir, "objects", "info", "alternates"), `${USER_OBJECTS}\n`);
  writeFileSync(join(paths.dir, "description"), "the private git directory of a paseo-host-runtime workspace\n");
  const copied = copiedConfig(user, settings);
  // An object format other than SHA-1 is an extension, which format version 1 must announce.
  const version = copied.some(([key]) => key === "extensions.objectformat") ? 1 : 0;
  writeFileSync(join(paths.dir, "config"), `[core]\n\trepositoryformatversion = ${version}\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n`);
  for (const [key, value] of copied) gitRead("/", ["config", "--file", join(paths.dir, "config"), "--add", key, value]);
  const exclude = join(user.commonDir, "info", "exclude");
  if (existsSync(exclude)) writeFileSync(join(paths.dir, "info", "exclude"), readFileSync(exclude));
  writeFileSync(paths.link, `gitdir: ${paths.dir}\n`);
}

/**
 * The settings of the user's repository that P carries: its format, remotes and branch
 * upstreams (fetch and push work inside as in the checkout), line-ending and file-system
 * settings, which submodules are initialized, and the identity git would commit with there (the
 * daemon user's global config is not visible inside). Never hooks, aliases, filters or any
 * setting that runs a command.
 */
const COPIED = /^(core\.repositoryformatversion|extensions\.objectformat|core\.(autocrlf|eol|safecrlf|ignorecase|precomposeunicode|symlinks|filemode|quotepath)|remote\.[^\n]*\.(url|pushurl|fetch|push|tagopt|mirror)|branch\.[^\n]*\.(remote|merge|rebase|pushremote)|submodule\.[^\n]*\.(url|active|branch)|user\.(name|email))$/;

function copiedConfig(user: UserGit, settings: GitSettings): [string, string][] {
  const local = gitCapture("/", ["--git-dir", user.gitDir, "config", "--local", "--list", "-z"], settings).stdout;
  const effective = gitCapture("/", ["--git-dir", user.gitDir, "config", "--list", "-z"], settings).stdout;
  // `config --list -z`: "key\nvalue\0", or "key\0" for a key without a value (skipped).
  const entries = (text: string) =>
    text
      .split("\0")
      .filter((entry) => entry.includes("\n"))
      .map((entry) => [entry.slice(0, entry.indexOf("\n")), entry.slice(entry.indexOf("\n") + 1)] as [string, string]);
  const copied = entries(local).filter(([key]) => COPIED.test(key) && !key.startsWith("user."));
  // The identity: the last value git would use (local over global over system).
  for (const key of ["user.name", "user.email"]) {
    const value = entries(effective).filter(([name]) => name === key).at(-1);
    if (value) copied.push(value);
  }
  return copied.filter(([key]) => key !== "core.repositoryformatversion" && key !== "core.filemode");
}

/** The user's HEAD as git writes it (`ref: refs/heads/x`, or a commit id); a malformed one is refused. */
export function readHead(gitDir: string): string {
  const text = readFileSync(join(gitDir, "HEAD"), "utf8").trim();
  if (/^ref: refs\/[^\s]+$/.test(text) || OBJECT_ID.test(text)) return text;
  throw new Error(`${join(gitDir, "HEAD")} is not a HEAD git would write (${JSON.stringify(text.slice(0, 80))})`);
}
