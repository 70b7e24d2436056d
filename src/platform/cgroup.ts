/**
 * cgroup v2 (Linux): where the hierarchy is, and the few file operations containment needs.
 * A cgroup is a directory; a process joins one by writing its pid to `cgroup.procs`, and
 * `cgroup.kill` SIGKILLs every process of a cgroup and its descendants, forks included.
 */
import { accessSync, closeSync, constants, existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFile, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { lazyOs } from "./lazy.ts";
import { ESRCH, pidfdOpen, pidfdSignal } from "./libc/processes.ts";
import { CGROUP_GONE, hasErrno, NO_ACCESS, PATH_MISSING, PROCESS_GONE, tolerating } from "./errno.ts";
import { statOrNull } from "./lookup.ts";
import { signalNumber } from "./signals.ts";
import { isLinux } from "./os.ts";

/** One line of /proc/self/mountinfo that matters here. */
export interface Mount {
  /** Where it is mounted. */
  mountPoint: string;
  /** The directory of the filesystem shown there (not "/" inside a cgroup namespace's view). */
  root: string;
  fsType: string;
  /** Super-block options: for cgroup v1, the controllers of that hierarchy. */
  superOptions: string[];
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** Parses /proc/self/mountinfo (proc(5)): fields, optional fields, "-", type, source, options. */
export function parseMountinfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split("\n")) {
    const fields = line.split(" ");
    const dash = fields.indexOf("-");
    if (dash < 6 || fields.length < dash + 4) continue;
    mounts.push({ root: unescape(fields[3]!), mountPoint: unescape(fields[4]!), fsType: fields[dash + 1]!, superOptions: fields[dash + 3]!.split(",") });
  }
  return mounts;
}

let mountCache: Mount[] | undefined;

/** Every mount this process sees. */
export function mounts(): Mount[] {
  mountCache ??= isLinux ? parseMountinfo(readFileSync("/proc/self/mountinfo", "utf8")) : [];
  return mountCache;
}

/** The cgroup v1 controllers mounted on this host (a hybrid host keeps memory, pids and cpu there). */
export function cgroupV1Controllers(): string[] {
  const known = new Set(["cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "net_cls", "blkio", "perf_event", "net_prio", "hugetlb", "pids", "rdma", "misc"]);
  return [...new Set(mounts().filter((m) => m.fsType === "cgroup").flatMap((m) => m.superOptions.filter((o) => known.has(o))))];
}

/** This process's cgroup v2 path (the `0::` line of /proc/<pid>/cgroup), or null (no v2, or the process is gone). */
export function cgroupPathOf(pid: number | "self" = "self"): string | null {
  const text = tolerating(PROCESS_GONE, null, () => readFileSync(`/proc/${pid}/cgroup`, "utf8"));
  if (text === null) return null;
  const line = text.split("\n").find((entry) => entry.startsWith("0::"));
  return line === undefined ? null : line.slice(3);
}

/** The cgroup v2 mounts, the conventional places first (/sys/fs/cgroup, a hybrid host's /sys/fs/cgroup/unified). */
export function cgroupV2Mounts(): Mount[] {
  const order = (m: Mount) => (m.mountPoint === "/sys/fs/cgroup" ? 0 : m.mountPoint === "/sys/fs/cgroup/unified" ? 1 : 2);
  return mounts()
    .filter((m) => m.fsType === "cgroup2")
    .sort((a, b) => order(a) - order(b));
}

/** The directory of hierarchy path `path` under `mount`, or null when that mount does not show it. */
export function directoryOf(mount: Mount, path: string): string | null {
  const inside = relative(mount.root, path);
  if (inside.startsWith("..")) return null;
  return inside === "" ? mount.mountPoint : join(mount.mountPoint, inside);
}

/** The mount a directory lies in (longest mount point that contains it), or null. */
export function mountOf(dir: string): Mount | null {
  let best: Mount | null = null;
  for (const mount of mounts()) {
    const inside = relative(mount.mountPoint, dir);
    if (inside.startsWith("..") || (inside !== "" && inside.startsWith(sep))) continue;
    if (!best || mount.mountPoint.length >= best.mountPoint.length) best = mount;
  }
  return best;
}

/** The hierarchy path of a cgroup directory ("/a/b"), given its mount. */
export function hierarchyPath(mount: Mount, dir: string): string {
  const inside = relative(mount.mountPoint, dir);
  return join(mount.root, inside === "" ? "." : inside).replace(/\/$/, "") || "/";
}

/** This process's own cgroup directory, or null when it is not under a visible cgroup v2 mount. */
export function ownCgroupDir(): string | null {
  const path = cgroupPathOf();
  if (path === null) return null;
  for (const mount of cgroupV2Mounts()) {
    const dir = directoryOf(mount, path);
    if (dir !== null && existsSync(join(dir, "cgroup.procs"))) return dir;
  }
  return null;
}

/** Linux kernel version as [major, minor]. */
export function kernelVersion(): [number, number] {
  const match = /^(\d+)\.(\d+)/.exec(lazyOs().release());
  return match ? [Number(match[1]), Number(match[2])] : [0, 0];
}

/** Whether the current user may write `path`. */
export function writable(path: string): boolean {
  return tolerating([...NO_ACCESS, ...PATH_MISSING], false, () => {
    accessSync(path, constants.W_OK);
    return true;
  });
}

/** True when `dir` is a cgroup directory (it has `cgroup.procs`). */
export function isCgroup(dir: string): boolean {
  return statOrNull(join(dir, "cgroup.procs"))?.isFile() ?? false;
}

/** Creates a cgroup (mkdir); true when it was made now, false when it existed. */
export function makeCgroup(dir: string): boolean {
  try {
    mkdirSync(dir, { mode: 0o755 });
    return true;
  } catch (error) {
    if (hasErrno(error, ["EEXIST"])) return false;
    throw new Error(`cannot create cgroup ${dir}: ${(error as Error).message}`);
  }
}

/**
 * Removes an empty cgroup (rmdir). True when it is gone; false when it still has processes
 * or child cgroups (EBUSY, ENOTEMPTY), which a caller may expect (a sibling still in use).
 */
export function removeCgroup(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    if (hasErrno(error, CGROUP_GONE)) return true;
    if (hasErrno(error, ["EBUSY", "ENOTEMPTY"])) return false;
    throw new Error(`cannot remove cgroup ${dir}: ${(error as Error).message}`);
  }
}

/** Child cgroups of `dir` (names). */
export function childCgroups(dir: string): string[] {
  return tolerating(CGROUP_GONE, [], () =>
    readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name),
  );
}

/** SIGKILLs every process in `dir` and below; false when the cgroup does not exist. */
export function killCgroup(dir: string): boolean {
  try {
    writeFileSync(join(dir, "cgroup.kill"), "1");
    return true;
  } catch (error) {
    if (hasErrno(error, CGROUP_GONE)) return false;
    throw new Error(`cannot kill cgroup ${dir} (cgroup.kill): ${(error as Error).message}`);
  }
}

/**
 * Freezes (or thaws) every process in `dir` and below through `cgroup.freeze` (Linux 5.2). The
 * freezer is invisible to the processes: no stop signal, nothing their parents could see.
 * False when the cgroup is gone or has no freezer.
 */
export function setFrozen(dir: string, frozen: boolean): boolean {
  try {
    writeFileSync(join(dir, "cgroup.freeze"), frozen ? "1" : "0");
    return true;
  } catch (error) {
    if (hasErrno(error, CGROUP_GONE)) return false;
    throw new Error(`cannot ${frozen ? "freeze" : "thaw"} cgroup ${dir} (cgroup.freeze): ${(error as Error).message}`);
  }
}

/** One key's value in `dir`'s cgroup.events, or null when the cgroup is gone. */
function eventField(dir: string, key: string): string | null {
  let text: string;
  try {
    text = readFileSync(join(dir, "cgroup.events"), "utf8");
  } catch (error) {
    if (hasErrno(error, CGROUP_GONE)) return null;
    throw new Error(`cannot read ${join(dir, "cgroup.events")}: ${(error as Error).message}`);
  }
  return new RegExp(`^${key} (\\S+)$`, "m").exec(text)?.[1] ?? null;
}

/** True once every process of `dir` and below is frozen (`frozen 1` in cgroup.events). */
export function isFrozen(dir: string): boolean {
  return eventField(dir, "frozen") === "1";
}

/** True while `dir` or a descendant holds a process (`populated 1` in cgroup.events). */
export function isPopulated(dir: string): boolean {
  return eventField(dir, "populated") === "1";
}

/** Moves process `pid` (all its threads) into cgroup `dir`. */
export function moveInto(dir: string, pid: number): void {
  try {
    writeFileSync(join(dir, "cgroup.procs"), String(pid));
  } catch (error) {
    throw new Error(`cannot move pid ${pid} into cgroup ${dir}: ${(error as Error).message}`);
  }
}

/**
 * Moves this process into the cgroup it already is in, off the event loop, so that the real
 * moves a little later are quick. Without the `favordynmods` mount option, the first cgroup
 * migration after a quiet spell waits for an RCU grace period (5–16 ms measured on this 2-core
 * VM) while holding the cgroup lock; those within a grace period after it do not. Its failure
 * is tolerated: the real move reports it. Once per process: priming `current` again returns
 * the first prime.
 */
export function primeMigration(current: string): Promise<void> {
  if (primed?.dir === current) return primed.done;
  // node:fs's callback form runs on Bun's thread pool, as node:fs/promises would, without
  // loading that module (~1 ms on the exec's path to `started`). An error is ignored: the real
  // move into the execution's cgroup says what is wrong.
  const done = new Promise<void>((resolve) => writeFile(join(current, "cgroup.procs"), String(process.pid), () => resolve()));
  primed = { dir: current, done };
  return done;
}

let primed: { dir: string; done: Promise<void> } | undefined;

/** Pids in `dir` and every cgroup below it. */
export function processesIn(dir: string): number[] {
  const pids: number[] = [];
  const visit = (at: string) => {
    const text = tolerating(CGROUP_GONE, null, () => readFileSync(join(at, "cgroup.procs"), "utf8"));
    if (text === null) return;
    for (const line of text.split("\n")) if (line !== "") pids.push(Number(line));
    for (const child of childCgroups(at)) visit(join(at, child));
  };
  visit(dir);
  return pids;
}

/**
 * Sends `signal` to process `pid` only if it is, at that moment, inside the cgroup whose
 * hierarchy path is `path` (or below): a pidfd is opened first, then membership checked, so a
 * pid that exited and was reused meanwhile is never hit. False when it is gone or elsewhere.
 */
export function signalIfInside(pid: number, path: string, signal: NodeJS.Signals): boolean {
  const fd = pidfdOpen(pid);
  if (fd < 0) return false;
  try {
    const where = cgroupPathOf(pid);
    if (where === null || (where !== path && !where.startsWith(`${path}/`))) return false;
    const result = pidfdSignal(fd, signalNumber(signal)!, false);
    if (result === -ESRCH) return false;
    if (result < 0) throw new Error(`pidfd_send_signal(${pid}, ${signal}) failed: errno ${-result}`);
    return true;
  } finally {
    closeSync(fd);
  }
}

/** Controllers a cgroup can use (`cgroup.controllers`). */
export function availableControllers(dir: string): string[] {
  return words(join(dir, "cgroup.controllers"));
}

/** Controllers a cgroup hands to its children (`cgroup.subtree_control`). */
function delegatedControllers(dir: string): string[] {
  return words(join(dir, "cgroup.subtree_control"));
}

function words(path: string): string[] {
  return tolerating(CGROUP_GONE, [], () => readFileSync(path, "utf8").trim().split(/\s+/).filter(Boolean));
}

/** Enables controllers for the children of `dir`; throws with the kernel's reason (EBUSY, EACCES…). */
export function delegateControllers(dir: string, controllers: readonly string[]): void {
  const missing = controllers.filter((name) => !delegatedControllers(dir).includes(name));
  if (missing.length === 0) return;
  try {
    writeFileSync(join(dir, "cgroup.subtree_control"), missing.map((name) => `+${name}`).join(" "));
  } catch (error) {
    const why = hasErrno(error, ["EBUSY"]) ? "it holds processes itself (cgroup v2 allows controllers only above cgroups without processes)" : (error as Error).message;
    throw new Error(`cannot enable ${missing.join(", ")} in ${join(dir, "cgroup.subtree_control")}: ${why}`);
  }
}

/** Writes one interface file (`memory.max`, `pids.max`, `cpu.max`…). */
export function writeInterface(dir: string, file: string, value: string): void {
  try {
    writeFileSync(join(dir, file), value);
  } catch (error) {
    throw new Error(`cannot write ${JSON.stringify(value)} to ${join(dir, file)}: ${(error as Error).message}`);
  }
}

/** A counter such as `memory.current` or `pids.current`, or null when the file is not there. */
export function readCounter(dir: string, file: string): number | null {
  const text = tolerating(CGROUP_GONE, null, () => readFileSync(join(dir, file), "utf8"));
  if (text === null) return null;
  const value = Number(text.trim());
  return Number.isFinite(value) ? value : null;
}

/** Whether `dir` is the top of its hierarchy (the root cgroup has no cgroup.kill of its own). */
function isHierarchyRoot(dir: string): boolean {
  const mount = mountOf(dir);
  return mount !== null && mount.fsType === "cgroup2" && mount.mountPoint === dir && mount.root === "/";
}

/** Whether cgroup.kill can be used below `dir` (Linux 5.14). */
export function supportsKill(dir: string): boolean {
  if (existsSync(join(dir, "cgroup.kill"))) return true;
  if (!isHierarchyRoot(dir)) return false;
  const [major, minor] = kernelVersion();
  return major > 5 || (major === 5 && minor >= 14);
}
