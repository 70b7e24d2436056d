/**
 * Which containment holds the executions of this call, and the limits it can apply.
 *
 * cgroup containment (Linux, a usable cgroup v2 hierarchy): every execution in a cgroup of its
 * own, under its workspace's, under this runtime home's (cgroup-tree.ts has the hierarchy).
 * Otherwise process-group containment: a workload is its session and process group, trusted
 * only while its leader proves them its own (group-scope.ts).
 */
import { dirname, join, relative } from "node:path";
import { availableControllers, cgroupV1Controllers, cgroupV2Mounts, isCgroup, kernelVersion, mountOf, ownCgroupDir, supportsKill, writable } from "../platform/cgroup.ts";
import { isLinux } from "../platform/os.ts";
import { realPathOrNull } from "../platform/lookup.ts";
import type { RuntimeOptions } from "../options.ts";

/** What holds the executions started by this call. */
export type Containment =
  | {
      kind: "cgroup";
      /** The cgroup directory everything of this runtime home goes under. */
      root: string;
      /** How the root was found: "options.cgroupRoot" or "autodetected from /proc/self/cgroup". */
      source: string;
      /** `<root>/paseo-<hash>`: this runtime home's cgroup. */
      homeCgroup: string;
    }
  | {
      kind: "process-group";
      /** Why cgroups are not used (for doctor). */
      reason: string;
      /** The reason in two parts, when the host could give cgroups: what is missing, and how to give it (doctor's detail and fix). */
      missing?: { problem: string; fix: string };
    };

/** `containment: "cgroup"` asked for what this host cannot give; says what is missing and how to fix it. */
export class ContainmentError extends Error {
  override name = "ContainmentError";
  constructor(
    readonly problem: string,
    readonly fix: string,
  ) {
    super(`${problem}; fix: ${fix}`);
  }
}

interface Problem {
  problem: string;
  fix: string;
}

const DELEGATE_FIX =
  "run the daemon where a cgroup v2 subtree is delegated to its user — as root, in a systemd service with Delegate=yes, or under `systemd-run --user --scope -p Delegate=yes` — or set options.cgroupRoot to such a directory (docs/operators.md: Cgroup containment)";

/** Why `root` cannot hold this runtime's cgroups, or null when it can. */
function cgroupRootProblem(root: string): Problem | null {
  if (!isLinux) return { problem: "cgroups exist only on Linux", fix: 'set options.containment to "process-group" (or "auto")' };
  const mount = mountOf(root);
  if (!isCgroup(root) || mount?.fsType !== "cgroup2") {
    const what = mount?.fsType === "cgroup" ? "a cgroup v1 directory" : isCgroup(root) ? "not on a cgroup v2 mount" : "not a cgroup directory";
    const v2 = cgroupV2Mounts()[0]?.mountPoint;
    return { problem: `options.cgroupRoot ${root} is ${what}`, fix: v2 ? `point options.cgroupRoot at a delegated directory under ${v2}` : "this host has no cgroup v2 hierarchy mounted" };
  }
  if (!supportsKill(root)) return noCgroupKill();
  const uid = process.getuid?.() ?? -1;
  if (!writable(root)) return { problem: `cgroup ${root} is not writable by uid ${uid} (not delegated to this user)`, fix: DELEGATE_FIX };
  const own = ownCgroupDir();
  if (own === null) return { problem: "this process's cgroup (/proc/self/cgroup) is not visible under any cgroup v2 mount", fix: DELEGATE_FIX };
  const common = commonAncestor(own, root);
  if (!writable(join(common, "cgroup.procs"))) {
    return { problem: `moving a workload from this process's cgroup ${own} into ${root} needs write access to ${join(common, "cgroup.procs")}, which uid ${uid} lacks`, fix: `start the daemon inside the delegated subtree; ${DELEGATE_FIX}` };
  }
  return null;
}

/** This kernel is older than cgroup.kill (Linux 5.14), which cgroup containment ends executions with. */
function noCgroupKill(): Problem {
  const [major, minor] = kernelVersion();
  return { problem: `this kernel (${major}.${minor}) has no cgroup.kill`, fix: 'cgroup containment needs Linux 5.14 or newer; set options.containment to "process-group"' };
}

function commonAncestor(a: string, b: string): string {
  let dir = a;
  while (relative(dir, b).startsWith("..")) dir = dirname(dir);
  return dir;
}

/** The cgroup root for `options`: the configured one, or this process's own cgroup. */
function findCgroupRoot(options: Pick<RuntimeOptions, "cgroupRoot">): { root: string; source: string } | Problem {
  if (options.cgroupRoot !== undefined) return { root: options.cgroupRoot, source: "options.cgroupRoot" };
  if (!isLinux) return { problem: "cgroups exist only on Linux", fix: 'nothing to do: process groups are used on this platform' };
  if (cgroupV2Mounts().length === 0) {
    return { problem: "no cgroup v2 hierarchy is mounted (this host has cgroup v1 only)", fix: "boot with systemd.unified_cgroup_hierarchy=1, or mount one (mount -t cgroup2 none /sys/fs/cgroup/unified)" };
  }
  const own = ownCgroupDir();
  if (own === null) return { problem: "/proc/self/cgroup names no cgroup v2 directory visible here", fix: DELEGATE_FIX };
  return { root: own, source: "autodetected from /proc/self/cgroup" };
}

/** `<root>/paseo-<hash of the home's real path>`: the runtime home's cgroup, above its workspaces'. */
export function homeCgroupOf(root: string, home: string): string {
  // A home not made yet: its path is its name.
  const real = realPathOrNull(home) ?? home;
  return join(root, `paseo-${new Bun.CryptoHasher("sha256").update(real).digest("hex").slice(0, 16)}`);
}

/**
 * The containment in force for `options`. "auto" falls back to process groups (with the reason
 * kept for doctor); "cgroup" throws ContainmentError instead. Looks only: creates nothing.
 */
export function resolveContainment(options: RuntimeOptions, home: string): Containment {
  if (options.containment === "process-group") return { kind: "process-group", reason: 'options.containment is "process-group"' };
  const found = findCgroupRoot(options);
  const problem = "problem" in found ? found : cgroupRootProblem(found.root);
  if (problem) {
    if (options.containment === "cgroup") throw new ContainmentError(`options.containment is "cgroup" but ${problem.problem}`, problem.fix);
    return { kind: "process-group", reason: `${problem.problem} (${problem.fix})`, missing: { problem: problem.problem, fix: problem.fix } };
  }
  const { root, source } = found as { root: string; source: string };
  return { kind: "cgroup", root, source, homeCgroup: homeCgroupOf(root, home) };
}

/** One limit option as a cgroup interface file. */
export interface Limit {
  option: "memoryMax" | "pidsMax" | "cpuMax";
  controller: "memory" | "pids" | "cpu";
  file: string;
  value: string | undefined;
}

/** Every limit option, asked for (a value) or not. */
export function limitsOf(options: RuntimeOptions): Limit[] {
  return [
    { option: "memoryMax", controller: "memory", file: "memory.max", value: options.memoryMax },
    { option: "pidsMax", controller: "pids", file: "pids.max", value: options.pidsMax },
    { option: "cpuMax", controller: "cpu", file: "cpu.max", value: options.cpuMax },
  ];
}

/** The limits `options` asks for (a value given). */
function wantedLimits(options: RuntimeOptions): Limit[] {
  return limitsOf(options).filter((limit) => limit.value !== undefined);
}

/** The cgroup limit options `options` set (memoryMax, pidsMax, cpuMax). */
export function askedLimits(options: RuntimeOptions): string[] {
  return wantedLimits(options).map((limit) => limit.option);
}

/** Whether `options` set any cgroup limit. */
export function wantsLimits(options: RuntimeOptions): boolean {
  return askedLimits(options).length > 0;
}

/**
 * Refuses, before anything changes, limits this containment cannot apply: a controller that is
 * not available in the cgroup root, or no cgroups at all. Returns the controllers needed.
 */
export function checkLimits(containment: Containment, options: RuntimeOptions): string[] {
  const wanted = wantedLimits(options);
  if (wanted.length === 0) return [];
  const names = wanted.map((limit) => `options.${limit.option}`).join(", ");
  if (containment.kind === "process-group") {
    throw new ContainmentError(`${names} needs cgroup containment, but process groups are in force: ${containment.reason}`, "give the runtime a delegated cgroup v2 hierarchy (docs/operators.md: Cgroup containment), or drop the limit options");
  }
  const missing = missingController(containment.root, wanted);
  if (missing) throw missing;
  return [...new Set(wanted.map((limit) => limit.controller))];
}

/** The first of `wanted`'s controllers `root` does not have, as the refusal that names it. */
function missingController(root: string, wanted: readonly Limit[]): ContainmentError | null {
  const available = availableControllers(root);
  const limit = wanted.find((one) => !available.includes(one.controller));
  if (limit === undefined) return null;
  const onV1 = cgroupV1Controllers().includes(limit.controller);
  const where = onV1 ? `; on this host the ${limit.controller} controller is bound to cgroup v1 (a hybrid hierarchy), so cgroup v2 cannot have it` : "";
  return new ContainmentError(
    `options.${limit.option} needs the ${limit.controller} controller, which is not available in ${root} (cgroup.controllers: ${available.join(" ") || "none"})${where}`,
    onV1
      ? "boot with systemd.unified_cgroup_hierarchy=1 (pure cgroup v2), or drop the option"
      : `delegate it: systemd Delegate=${limit.controller} (or Delegate=yes), or enable it in the parent's cgroup.subtree_control; or drop the option`,
  );
}

/**
 * Why no cgroup this host shows could apply `options`' cgroup containment and limits, wherever
 * the daemon runs on it: no cgroups here (not Linux, no cgroup v2, no cgroup.kill), or a limit's
 * controller missing at the top of the hierarchy (bound to cgroup v1, or not there at all).
 * null: a cgroup delegated to the daemon could; the one it runs in decides (checkLimits there).
 */
export function hostContainmentProblem(options: RuntimeOptions): ContainmentError | null {
  const top = cgroupV2Mounts()[0]?.mountPoint;
  if (top === undefined) {
    const none = findCgroupRoot({});
    return "problem" in none ? new ContainmentError(none.problem, none.fix) : null;
  }
  if (!supportsKill(top)) {
    const { problem, fix } = noCgroupKill();
    return new ContainmentError(problem, fix);
  }
  return missingController(top, wantedLimits(options));
}
