/**
 * The opt-in sandbox (`options.isolation: "sandbox"`): what a workload started inside it sees,
 * computed as a transformation of its launch (program + argv + env, and the descriptors the
 * spawn hands over). Linux: bubblewrap (`bwrap`, distribution package `bubblewrap`), never
 * home-made namespaces. macOS (unverified here): `sandbox-exec` with a generated profile.
 *
 * Linux process tree: wrapper → bwrap (its monitor) → bwrap's init, pid 1 of a new pid
 * namespace (reaps orphans) → this runtime's sandbox init (src/containment/sandbox-init.ts), which
 * starts the workload and reports its exact wait status, something bwrap cannot (it turns a
 * death by signal n into status 128+n, on its exit and on --json-status-fd alike).
 */
import { accessSync, constants, existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, realpathSync } from "node:fs";
import { join, sep } from "node:path";
import { identityOfStat } from "./directory.ts";
import { lazyChildProcess, lazyOs } from "./lazy.ts";
import { holdsPid, identityOfProcess, listProcesses } from "./process.ts";
import { isMacOS } from "./os.ts";

/** The package that brings bwrap on Debian, Ubuntu, Fedora, Arch and Alpine alike. */
export const BWRAP_PACKAGE = "bubblewrap";

/**
 * Descriptor numbers in bwrap (and in the sandbox init after it), set by the spawn's stdio
 * array. bwrap closes `root` once it is mounted and `init` once it is copied; only the
 * sandbox init inherits the others (stdin, stdout and stderr in pipes mode only).
 */
export const SANDBOX_FDS = { control: 3, root: 4, init: 5, stdin: 6, stdout: 7, stderr: 8 } as const;

/** Where the sandbox init's script is, inside the sandbox (bwrap copies it from SANDBOX_FDS.init). */
export const SANDBOX_INIT_PATH = "/.paseo-sandbox-init.ts";

/** What the workload sees of the host besides the system directories. */
export interface SandboxView {
  /** The workspace root: bound read-write at its own path from the checked descriptor SANDBOX_FDS.root (null: none, for the probe). */
  root: string | null;
  /** Host directories or files visible read-write at the same path. */
  readWrite: string[];
  /** Host directories or files visible read-only at the same path. */
  readOnly: string[];
  network: "host" | "none";
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
   * directories from the workload (src/workspace/private-git.ts).
   */
  overlays?: Overlay[];
}

/** One bind of SandboxView.overlays. */
export interface Overlay {
  source: string;
  target: string;
  writable: boolean;
}

/** A launch as Bun.spawn takes it: the file to execute, argv (argv[0] passed as is) and env. */
export interface Launch {
  program: string;
  argv: string[];
  env: Record<string, string>;
}

/** Why the sandbox cannot be used; create, resume and exec refuse with this message. */
export class SandboxUnavailable extends Error {}

/**
 * The sysctls that decide whether bwrap may create namespaces for a user other than root.
 * Named in every refusal, since "no permission" is what their defaults look like.
 */
const USERNS_HINT =
  "for a daemon not running as root bwrap needs unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1 (Debian, older Ubuntu), " +
  "user.max_user_namespaces above 0, and on Ubuntu 23.10 or later kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile that allows bwrap)";

/**
 * The sandbox tool: bwrap found on the runtime's PATH (the daemon's environment, like git),
 * or macOS's sandbox-exec. Throws SandboxUnavailable naming the package to install.
 */
export function sandboxTool(): string {
  if (isMacOS) {
    if (existsSync("/usr/bin/sandbox-exec")) return "/usr/bin/sandbox-exec";
    throw new SandboxUnavailable('isolation "sandbox" needs /usr/bin/sandbox-exec, which this macOS does not have; nothing was run');
  }
  const path = process.env.PATH ?? "";
  const found = Bun.which("bwrap", { PATH: path });
  if (found) return found;
  throw new SandboxUnavailable(
    `isolation "sandbox" needs bubblewrap, and bwrap is not on the runtime's PATH (${path || "unset"}): install the package ${BWRAP_PACKAGE} ` +
      `(apt-get install ${BWRAP_PACKAGE}, dnf install ${BWRAP_PACKAGE}); ${USERNS_HINT}; nothing was run`,
  );
}

/**
 * A sandbox that did not start, in bwrap's own words, with the usual cause spelled out (in PTY
 * mode bwrap's words went to the terminal, and only its exit status is known here).
 */
export function explainSandboxFailure(detail: string): string {
  return `the sandbox did not start (${BWRAP_PACKAGE}: ${detail.trim() || "no message"}); ${USERNS_HINT}`;
}

/**
 * The one transformation: `launch` becomes what is spawned. Linux: bwrap with `init` as its
 * command and env (the workload itself travels over SANDBOX_FDS.control, never in argv: its
 * env may hold secrets). macOS: sandbox-exec in front of the workload, same env.
 */
export function sandboxLaunch(launch: Launch, view: SandboxView, tool: string, init: { argv: string[]; env: Record<string, string> }): Launch {
  if (isMacOS) {
    // sandbox-exec execvp's its first argument, so argv[0] becomes the program's path.
    return { program: tool, argv: ["sandbox-exec", "-p", sandboxProfile(view, launch), launch.program, ...launch.argv.slice(1)], env: launch.env };
  }
  const script = ["--perms", "0444", "--file", String(SANDBOX_FDS.init), SANDBOX_INIT_PATH];
  return { program: tool, argv: ["bwrap", ...bwrapArguments(view), ...script, "--", ...init.argv], env: init.env };
}

/**
 * bwrap's options, in mount order (a later mount lies over an earlier one):
 * - `--die-with-parent`: SIGKILL for the sandbox when the wrapper dies (bwrap sets it on its
 *   monitor, its init and the command).
 * - `--unshare-pid`: its own pid namespace, so no host process is visible; bwrap's init is
 *   pid 1 and reaps orphans. `--unshare-ipc`: no host SysV IPC or POSIX message queues.
 *   `--unshare-net` with network "none": only a loopback interface of its own.
 * - `--cap-drop ALL`: when the daemon runs as root, bwrap would otherwise leave the command
 *   its capabilities (uid 0 stays, but with no capability and no way to regain one).
 * - `--chdir /`: bwrap's own working directory inside; the init starts the workload in the
 *   checked directory itself.
 * - a fresh /proc, a minimal /dev (null, zero, full, random, urandom, tty, a private devpts),
 *   a private /tmp, /usr and /etc read-only, /bin /sbin /lib* as the host has them (symlinks
 *   into /usr, or read-only directories), secrets in /etc masked, then the workspace root and
 *   the view's other paths, shallowest first.
 */
export function bwrapArguments(view: SandboxView): string[] {
  const args = ["--die-with-parent", "--unshare-pid", "--unshare-ipc"];
  if (view.network === "none") args.push("--unshare-net");
  args.push("--cap-drop", "ALL", "--chdir", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  args.push(...systemDirectories(), ...etcSecretMasks(), ...resolverFile());
  for (const bind of anchoredBinds(view)) {
    if (bind.kind === "root") args.push("--bind-fd", String(SANDBOX_FDS.root), bind.target);
    else if (bind.kind === "mask") args.push("--tmpfs", bind.target);
    else args.push(bind.writable ? "--bind" : "--ro-bind", bind.source, bind.target);
  }
  return args;
}

/** One mount of the sandbox, in the order bwrap makes them. */
interface Bind {
  kind: Mount["kind"] | "overlay" | "anchor";
  source: string;
  target: string;
  /** Shows a host directory writable (a mask's tmpfs is the sandbox's own). */
  writable: boolean;
}

/**
 * The view's mounts and overlays, each directory on the way from a writable host directory of
 * the view down to a mount inside it bound onto itself first (an anchor): a mount point cannot
 * be renamed or removed, so no workload can move a masked home, a read-only git dir, the root or
 * a private git dir away on the host and put a directory of its own at that path (which the
 * runtime and the user's git would then read as theirs). Below a mask nothing needs one: a
 * rename there changes only the sandbox's tmpfs.
 */
function anchoredBinds(view: SandboxView): Bind[] {
  const mounts: Bind[] = viewMounts(view).map((mount) => ({ kind: mount.kind, source: mount.path, target: mount.path, writable: mount.kind === "root" || mount.kind === "rw" }));
  const overlays: Bind[] = (view.overlays ?? []).map((overlay) => ({ kind: "overlay", source: overlay.source, target: overlay.target, writable: overlay.writable }));
  const all = [...mounts, ...overlays];
  const targets = new Set(all.map((bind) => bind.target));
  const inMounts = new Map<string, Bind>();
  const afterOverlay = new Map<number, Map<string, Bind>>();
  all.forEach((bind, index) => {
    const holder = holderOf(all, index);
    if (holder === null || !all[holder]!.writable) return;
    const into = holder < mounts.length ? inMounts : afterOverlay.set(holder, afterOverlay.get(holder) ?? new Map()).get(holder)!;
    for (const dir of between(all[holder]!.target, bind.target)) if (!targets.has(dir)) into.set(dir, { kind: "anchor", source: dir, target: dir, writable: true });
  });
  const depth = (path: string) => path.split(sep).length;
  // Shallowest first, as viewMounts: an anchor after its holder, before everything inside it.
  const ordered = [...mounts, ...inMounts.values()].sort((a, b) => depth(a.target) - depth(b.target));
  overlays.forEach((overlay, index) => ordered.push(overlay, ...(afterOverlay.get(mounts.length + index)?.values() ?? [])));
  return ordered;
}

/** The mount `all[index]` lies in when it is made: the latest one before it whose target holds its own (a later one lies over an earlier); null when none. */
function holderOf(all: readonly Bind[], index: number): number | null {
  const target = all[index]!.target;
  for (let i = index - 1; i >= 0; i--) if (target.startsWith(`${all[i]!.target}${sep}`)) return i;
  return null;
}

/** The directories strictly between `outer` and `inner` (inside it), outermost first. */
function between(outer: string, inner: string): string[] {
  const parts = inner.slice(outer.length + 1).split(sep).slice(0, -1);
  return parts.map((_, i) => join(outer, ...parts.slice(0, i + 1)));
}

/**
 * What the sandbox init checks before the workload starts (`device:inode` now): each anchor,
 * and each path of the view bound at its own path inside a writable host directory of the view
 * (a `sandboxReadWrite` or `sandboxReadOnly` path inside the workspace). bwrap binds them by
 * path, after this look, and follows a symbolic link it finds there, which the workload can
 * make or re-point: one there refuses the launch (a link named as `sandboxReadWrite` could be
 * pointed at a read-only path, or `/usr`, and written through).
 */
export function keptInPlace(view: SandboxView): { path: string; identity: string }[] {
  const binds = anchoredBinds(view);
  return binds.flatMap((bind, index) => {
    const held = bind.kind === "anchor" || (bind.kind !== "mask" && bind.kind !== "root" && bind.source === bind.target && writableHolder(binds, holderOf(binds, index)));
    if (!held) return [];
    const stat = lstatSync(bind.target, { bigint: true, throwIfNoEntry: false });
    if (stat === undefined || stat.isSymbolicLink() || (bind.kind === "anchor" && !stat.isDirectory())) {
      throw new Error(`${bind.target} lies in what the workload writes and is ${stat ? "a symbolic link" : "gone"}, which the sandbox would follow: nothing was launched; name the directory it leads to instead`);
    }
    return [{ path: bind.target, identity: identityOfStat(stat) }];
  });
}

/** Whether the holder at `index` shows a host directory writable. */
function writableHolder(binds: readonly Bind[], index: number | null): boolean {
  return index !== null && binds[index]!.writable;
}

/** The directories every sandbox sees read-only (or, for /bin and the like, as symlinks into /usr). */
const SYSTEM_DIRECTORIES = ["/usr", "/etc"] as const;
const USR_LINKS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] as const;

function systemDirectories(): string[] {
  const args = ["--ro-bind", "/usr", "/usr"];
  for (const path of USR_LINKS) {
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (stat?.isSymbolicLink()) args.push("--symlink", readlinkSync(path), path);
    else if (stat?.isDirectory()) args.push("--ro-bind", path, path);
  }
  args.push("--ro-bind", "/etc", "/etc");
  return args;
}

/**
 * Files of /etc that hold host secrets. They are masked (an unreadable device node, or an
 * empty directory) when this process can read them, which in practice means a daemon
 * running as root: for anyone else they are unreadable anyway. The rest of /etc is visible.
 */
const ETC_SECRETS = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/security/opasswd", "/etc/ssl/private"];

function etcSecretMasks(): string[] {
  const paths = [...ETC_SECRETS, ...sshHostKeys()];
  const args: string[] = [];
  for (const path of paths) {
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (!stat || stat.isSymbolicLink() || !readable(path)) continue;
    if (stat.isDirectory()) args.push("--tmpfs", path);
    else args.push("--ro-bind", "/dev/null", path);
  }
  return args;
}

function sshHostKeys(): string[] {
  try {
    return readdirSync("/etc/ssh")
      .filter((name) => /^ssh_host_.*_key$/.test(name))
      .map((name) => join("/etc/ssh", name));
  } catch {
    return [];
  }
}

function readable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/** A /etc/resolv.conf that links outside /etc and /usr (systemd-resolved's /run/…): its target, read-only. */
function resolverFile(): string[] {
  const link = "/etc/resolv.conf";
  if (!lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) return [];
  let target: string;
  try {
    target = realpathSync(link);
  } catch {
    return [];
  }
  return covered(target, SYSTEM_DIRECTORIES) ? [] : ["--ro-bind", target, target];
}

interface Mount {
  path: string;
  kind: "root" | "rw" | "ro" | "mask";
}

/** The view's mounts, shallowest first so that a deeper one lies over its parent; at equal depth root, rw, ro, then the masks of `hidden`. */
function viewMounts(view: SandboxView): Mount[] {
  const order = { root: 0, rw: 1, ro: 2, mask: 3 };
  const root = view.root;
  const inRoot = (path: string) => root !== null && covered(path, [root]);
  // Where a hidden directory lies below a view path it is masked there; a view path inside one is masked unless it is the root's.
  const masks = (view.hidden ?? []).flatMap((dir) => placesInView(dir, view).filter((place) => place.source === dir || !inRoot(place.target)));
  const mounts: Mount[] = [
    ...(root === null ? [] : [{ path: root, kind: "root" as const }]),
    ...view.readWrite.map((path) => ({ path, kind: "rw" as const })),
    ...view.readOnly.map((path) => ({ path, kind: "ro" as const })),
    ...[...new Set(masks.map((place) => place.target))].map((path) => ({ path, kind: "mask" as const })),
  ];
  const depth = (path: string) => path.split(sep).length;
  return mounts.sort((a, b) => depth(a.path) - depth(b.path) || order[a.kind] - order[b.kind]);
}

/** True when `path` is one of `directories` or lies beneath one. */
function covered(path: string, directories: readonly string[]): boolean {
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
    for (const path of [file, realOrNull(file)]) {
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
export function shownInView(path: string, view: SandboxView): boolean {
  return covered(path, [...SYSTEM_DIRECTORIES, ...USR_LINKS, "/dev", "/proc", ...(view.root === null ? [] : [view.root]), ...view.readWrite, ...view.readOnly]);
}

/**
 * Every place in the sandbox where the view shows host directory `dir` or a part of it, as a
 * bind that would lie over it there: below a path of the view that shows it (compared as
 * resolved on the host, since bwrap follows a symbolic link in a source, so `dir` appears
 * under the path the view names), and each path of the view that lies inside it.
 */
export function placesInView(dir: string, view: SandboxView): { source: string; target: string }[] {
  const real = realOrNull(dir) ?? dir;
  const places = new Map<string, { source: string; target: string }>();
  for (const shown of [...SYSTEM_DIRECTORIES, ...(view.root === null ? [] : [view.root]), ...view.readWrite, ...view.readOnly]) {
    const source = realOrNull(shown) ?? shown;
    if (covered(real, [source])) places.set(shown + real.slice(source.length), { source: dir, target: shown + real.slice(source.length) });
    else if (covered(source, [real])) places.set(shown, { source: shown, target: shown });
  }
  return [...places.values()];
}

function realOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/**
 * Starts a sandboxed /bin/true with the same namespaces a workload gets: null when that works,
 * else why not (bwrap missing, or its namespaces refused). What `doctor`, create and resume run.
 */
export function probeSandbox(network: "host" | "none"): string | null {
  let tool: string;
  try {
    tool = sandboxTool();
  } catch (error) {
    return (error as Error).message;
  }
  const argv =
    isMacOS
      ? [tool, "-p", "(version 1)(allow default)", "/usr/bin/true"]
      : [tool, ...bwrapArguments({ root: null, readWrite: [], readOnly: [], network }), "--", "/bin/true"];
  const result = lazyChildProcess().spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", env: {}, timeout: 10_000, stdio: ["ignore", "ignore", "pipe"] });
  if (result.status === 0) return null;
  const detail = result.error?.message ?? (result.stderr || `exit status ${result.status ?? result.signal}`);
  return `isolation "sandbox": ${explainSandboxFailure(detail)}; nothing was run`;
}

/**
 * The host pid of the process that is `nsPid` in the pid namespace of the sandbox whose bwrap
 * is `monitor`, started at `startTicks` (the same clock inside and out), and the host pid of
 * that namespace's init. bwrap's one child is the init; the sandbox init is the init's child
 * and the workload the sandbox init's: two levels are searched below the init.
 */
export function findInSandbox(monitor: number, nsPid: number, startTicks: number): { pid: number; init: number } | null {
  const [init] = childrenOf(monitor);
  if (init === undefined) return null;
  let level = childrenOf(init);
  for (let depth = 0; depth < 2 && level.length > 0; depth++) {
    for (const pid of level) {
      if (innermostPid(pid) === nsPid && holdsPid(identityOfProcess({ pid, startTicks }))) return { pid, init };
    }
    level = level.flatMap(childrenOf);
  }
  return null;
}

/** Children of `pid` made by its main thread (/proc/…/children), or by any thread where that file is missing. */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "latin1").split(" ").filter(Boolean).map(Number);
  } catch {
    return listProcesses()
      .filter((info) => info.ppid === pid)
      .map((info) => info.pid);
  }
}

/** The pid a process has in its own (innermost) pid namespace: the last NSpid field. */
function innermostPid(pid: number): number | null {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "latin1")
      .split("\n")
      .find((entry) => entry.startsWith("NSpid:"));
    return line ? Number(line.trim().split(/\s+/).at(-1)) : null;
  } catch {
    return null;
  }
}

/**
 * macOS (unverified here): a Seatbelt profile that allows everything except writes outside the
 * workspace (and the view's read-write paths, and the terminal and null devices) and reads of
 * the daemon user's home other than the workspace and what the launch needs. Last match wins
 * in SBPL, so the exceptions come after the denials. Ancestors of allowed paths keep their
 * metadata readable, or path lookups (realpath, getcwd) beneath the home would fail.
 */
export function sandboxProfile(view: SandboxView, launch: Launch): string {
  const home = lazyOs().homedir();
  const quote = (path: string) => `"${path.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
  const subpaths = (paths: readonly string[]) => paths.map((path) => `(subpath ${quote(path)})`).join(" ");
  const writable = [...(view.root === null ? [] : [view.root]), ...view.readWrite];
  const readableInHome = [...writable, ...view.readOnly, launch.program];
  const ancestors = [...new Set(readableInHome.flatMap(ancestorsOf))];
  const lines = [
    "(version 1)",
    "(allow default)",
    "(deny file-write*)",
    `(allow file-write* ${subpaths(writable)} (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper") (regex #"^/dev/ttys[0-9]+$") (literal "/dev/tty") (regex #"^/dev/fd/"))`,
    `(deny file-read* (subpath ${quote(home)}))`,
    `(allow file-read* ${subpaths(readableInHome)})`,
  ];
  // Hidden directories (the runtime's home): denied, but for the root inside one (a worktree's checkout).
  for (const dir of view.hidden ?? []) {
    lines.push(`(deny file-read* file-write* (subpath ${quote(dir)}))`);
    if (view.root !== null && covered(view.root, [dir])) lines.push(`(allow file-read* file-write* (subpath ${quote(view.root)}))`);
  }
  if (ancestors.length > 0) lines.push(`(allow file-read-metadata ${ancestors.map((path) => `(literal ${quote(path)})`).join(" ")})`);
  // Seatbelt cannot show a path somewhere else: only overlays in place, as allow or deny rules.
  for (const overlay of (view.overlays ?? []).filter((entry) => entry.source === entry.target)) {
    lines.push(`(${overlay.writable ? "allow" : "deny"} file-write* (subpath ${quote(overlay.source)}))`);
  }
  if (view.network === "none") lines.push("(deny network*)");
  return lines.join("\n");
}

function ancestorsOf(path: string): string[] {
  const out: string[] = [];
  for (let dir = path.slice(0, path.lastIndexOf(sep)); dir.length > 0; dir = dir.slice(0, dir.lastIndexOf(sep))) out.push(dir);
  return out;
}

/** For create and resume under isolation "sandbox": throws SandboxUnavailable unless a sandboxed /bin/true runs. */
export function requireSandbox(network: "host" | "none"): void {
  const problem = probeSandbox(network);
  if (problem !== null) throw new SandboxUnavailable(problem);
}
