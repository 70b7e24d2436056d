/**
 * A view (view.ts) as the mounts that make it, in order (a later mount lies over an earlier
 * one): a typed list of setup operations, policy only. bwrap.ts renders it as bwrap's options;
 * the sandbox init checks the paths keptInPlace names before the workload starts.
 *
 * The order: a fresh /proc, a minimal /dev (null, zero, full, random, urandom, tty, a private
 * devpts), a private /tmp, /usr and /etc read-only, /bin /sbin /lib* as the host has them
 * (symlinks into /usr, or read-only directories), secrets in /etc masked, then the workspace
 * root and the view's other paths, shallowest first, the masks of its hidden directories, and
 * last the overlays.
 */
import { accessSync, constants, lstatSync, readdirSync, readlinkSync } from "node:fs";
import { join, sep } from "node:path";
import { identityOfStat } from "../platform/directory.ts";
import { PATH_MISSING, tolerating } from "../platform/errno.ts";
import { realPathIfResolvable } from "../platform/lookup.ts";
import { SANDBOX_FDS } from "./init-protocol.ts";
import { covered, placesInView, SYSTEM_DIRECTORIES, USR_LINKS, type SandboxView } from "./view.ts";

/** One setup operation of the sandbox, made in order. */
export type SetupStep =
  | { op: "proc" | "dev" | "tmpfs"; target: string }
  | { op: "bind"; source: string; target: string; writable: boolean }
  | { op: "bind-fd"; fd: number; target: string }
  | { op: "symlink"; link: string; target: string };

/** Every mount of a sandbox showing `view`, in the order they are made. */
export function mountPlan(view: SandboxView): SetupStep[] {
  const steps: SetupStep[] = [
    { op: "proc", target: "/proc" },
    { op: "dev", target: "/dev" },
    { op: "tmpfs", target: "/tmp" },
    ...systemDirectories(),
    ...etcSecretMasks(),
    ...resolverFile(),
  ];
  for (const bind of anchoredBinds(view)) {
    if (bind.kind === "root") steps.push({ op: "bind-fd", fd: SANDBOX_FDS.root, target: bind.target });
    else if (bind.kind === "mask") steps.push({ op: "tmpfs", target: bind.target });
    else steps.push({ op: "bind", source: bind.source, target: bind.target, writable: bind.writable });
  }
  return steps;
}

/** One mount of the view, in the order it is made. */
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

function systemDirectories(): SetupStep[] {
  const steps: SetupStep[] = [{ op: "bind", source: "/usr", target: "/usr", writable: false }];
  for (const path of USR_LINKS) {
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (stat?.isSymbolicLink()) steps.push({ op: "symlink", link: readlinkSync(path), target: path });
    else if (stat?.isDirectory()) steps.push({ op: "bind", source: path, target: path, writable: false });
  }
  steps.push({ op: "bind", source: "/etc", target: "/etc", writable: false });
  return steps;
}

/**
 * Files of /etc that hold host secrets. They are masked (an unreadable device node, or an
 * empty directory) when this process can read them, which in practice means a daemon
 * running as root: for anyone else they are unreadable anyway. The rest of /etc is visible.
 */
const ETC_SECRETS = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/security/opasswd", "/etc/ssl/private"];

function etcSecretMasks(): SetupStep[] {
  const paths = [...ETC_SECRETS, ...sshHostKeys()];
  const steps: SetupStep[] = [];
  for (const path of paths) {
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (!stat || stat.isSymbolicLink() || !readable(path)) continue;
    if (stat.isDirectory()) steps.push({ op: "tmpfs", target: path });
    else steps.push({ op: "bind", source: "/dev/null", target: path, writable: false });
  }
  return steps;
}

/** The host's ssh host keys; none where /etc/ssh is missing or not ours to list. */
function sshHostKeys(): string[] {
  const names = tolerating([...PATH_MISSING, "EACCES"], [], () => readdirSync("/etc/ssh"));
  return names.filter((name) => /^ssh_host_.*_key$/.test(name)).map((name) => join("/etc/ssh", name));
}

/** Whether this process may read `path` (a secret it cannot read needs no mask). */
function readable(path: string): boolean {
  return tolerating(["EACCES", "EPERM", ...PATH_MISSING], false, () => {
    accessSync(path, constants.R_OK);
    return true;
  });
}

/** A /etc/resolv.conf that links outside /etc and /usr (systemd-resolved's /run/…): its target, read-only. */
function resolverFile(): SetupStep[] {
  const link = "/etc/resolv.conf";
  if (!lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) return [];
  // A link that leads nowhere (or in a loop) shows nothing more.
  const target = realPathIfResolvable(link);
  return target === null || covered(target, SYSTEM_DIRECTORIES) ? [] : [{ op: "bind", source: target, target, writable: false }];
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
