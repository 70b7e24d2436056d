/**
 * cgroup containment of one execution: everything of it runs in its own cgroup (cgroup-tree.ts
 * names and makes it). Entered at launch, signalled through the cgroup (cgroup.kill catches
 * forks racing it, other signals go to each process checked to be inside), held still by its
 * freezer, ended, removed; and a workspace's cgroup, ended as a whole and removed with it.
 */
import { dirname, join } from "node:path";
import { childCgroups, hierarchyPath, isFrozen, isPopulated, killCgroup, mountOf, moveInto, ownCgroupDir, primeMigration, processesIn, removeCgroup, setFrozen, signalIfInside } from "../platform/cgroup.ts";
import type { RuntimeOptions } from "../options.ts";
import type { ExecutionScope } from "./scope.ts";

/** The wrapper's own cgroup, which it comes back to after spawning inside an execution's, and the migration primed for it. */
export interface Origin {
  dir: string;
  primed: Promise<void>;
}

/**
 * Starts the cgroup migration prime (platform/cgroup.ts primeMigration) before the envelope is
 * read, so its grace period runs while the envelope is read and checked: originFor then finds
 * it started. Not earlier: while it waits, every fork and thread creation on the machine waits
 * too (cgroup_threadgroup_rwsem), and Bun creates threads while exec's modules load
 * (bench/README.md). Where options choose process-group containment it was one no-op move.
 */
export function primeOwnCgroup(): void {
  const own = ownCgroupDir();
  if (own !== null) void primeMigration(own);
}

/**
 * The wrapper's origin where `options` may choose cgroups, its prime started already
 * (primeOwnCgroup) or now, to overlap the kernel's grace period with the work before the
 * spawn; null under process groups, or when this process's own cgroup is not visible.
 */
export function originFor(options: Pick<RuntimeOptions, "containment">): Origin | null {
  const own = options.containment !== "process-group" ? ownCgroupDir() : null;
  return own === null ? null : { dir: own, primed: primeMigration(own) };
}

/** An execution held by its own cgroup `dir`: what is in it is the execution's, whatever left its session. */
export class CgroupScope implements ExecutionScope {
  constructor(readonly dir: string) {}

  async signal(signal: NodeJS.Signals, timeoutMs: number): Promise<boolean> {
    if (!(await signalCgroup(this.dir, signal, timeoutMs))) return false;
    removeCgroup(this.dir);
    return true;
  }

  async end(graceMs: number): Promise<void> {
    await endCgroup(this.dir, graceMs);
    removeCgroup(this.dir);
  }

  /**
   * Runs `spawn` with this process inside the cgroup, so that the child is in it from its first
   * instruction (a child inherits its parent's cgroup at fork), then moves back to `origin`.
   * If even that fails, this process sits in the cgroup with the workload: the cgroup is killed,
   * which ends both, and the record (pid 0, its cgroup, a dead wrapper) tells signal,
   * reconcile, pause and destroy where to look.
   */
  spawnInside<T>(origin: string, spawn: () => T): T {
    moveInto(this.dir, process.pid);
    try {
      return spawn();
    } finally {
      this.#comeBack(origin);
    }
  }

  #comeBack(origin: string): void {
    try {
      moveInto(origin, process.pid);
    } catch (error) {
      killCgroup(this.dir);
      throw error;
    }
  }

  /** Moves `pids` (a sandbox's own processes) out to `origin`: the cgroup then holds exactly the workload's. */
  moveOut(pids: readonly number[], origin: string): void {
    for (const pid of pids) moveInto(origin, pid);
  }

  async killAll(): Promise<void> {
    this.kill();
  }

  /** cgroup.kill, now: every process in it and below, forks racing it included. */
  kill(): void {
    killCgroup(this.dir);
  }

  quiesce(fn: () => void): Promise<boolean> {
    return whileFrozen(this.dir, fn);
  }

  hasEnded(): boolean {
    return !isPopulated(this.dir);
  }

  remove(): void {
    removeCgroup(this.dir);
  }
}

/**
 * Sends `signal` to every process in `dir` and below, newcomers included, until the cgroup is
 * empty or `timeoutMs` passed; true when it is empty. SIGKILL goes through cgroup.kill (which
 * also catches forks racing it), other signals to each process checked to be inside, followed
 * by SIGCONT so a stopped process can act on it.
 */
async function signalCgroup(dir: string, signal: NodeJS.Signals, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  const mount = mountOf(dir);
  const path = mount ? hierarchyPath(mount, dir) : dir;
  const signalled = new Set<number>();
  let pause = 1;
  for (;;) {
    if (!isPopulated(dir)) return true;
    if (performance.now() >= deadline) return false;
    if (signal === "SIGKILL") {
      if (!killCgroup(dir)) return true;
    } else {
      for (const pid of processesIn(dir)) {
        if (signalled.has(pid)) continue;
        signalled.add(pid);
        if (signalIfInside(pid, path, signal) && signal !== "SIGCONT") signalIfInside(pid, path, "SIGCONT");
      }
    }
    await Bun.sleep(pause);
    pause = Math.min(pause * 2, signal === "SIGKILL" ? 10 : 20);
  }
}

/** SIGTERM to everything in `dir`, up to `graceMs`, then cgroup.kill until empty; throws if that fails. */
export async function endCgroup(dir: string, graceMs: number, killTimeoutMs = 5000): Promise<void> {
  if (!isPopulated(dir)) return;
  if (graceMs > 0 && (await signalCgroup(dir, "SIGTERM", graceMs))) return;
  if (await signalCgroup(dir, "SIGKILL", killTimeoutMs)) return;
  throw new Error(`cgroup ${dir} still holds processes ${processesIn(dir).join(", ")} ${killTimeoutMs} ms after cgroup.kill`);
}

/** Waits up to `timeoutMs` for every process of `dir` to be frozen (`frozen 1` in cgroup.events). */
async function waitFrozen(dir: string, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (isFrozen(dir)) return true;
    if (performance.now() >= deadline) return false;
    await Bun.sleep(0);
  }
}

/** How long a freeze may take before quiesce gives up (a process in uninterruptible sleep delays it). */
const FREEZE_WAIT_MS = 100;

/** `fn()` while every process of `cgroup` is frozen; always thawed afterwards. */
async function whileFrozen(cgroup: string, fn: () => void): Promise<boolean> {
  if (!setFrozen(cgroup, true)) return false;
  try {
    if (!(await waitFrozen(cgroup, FREEZE_WAIT_MS))) return false;
    fn();
    return true;
  } finally {
    setFrozen(cgroup, false);
  }
}

/**
 * Removes a workspace's cgroup once nothing runs in it: its (empty) execution cgroups, itself,
 * and its home cgroup when that holds no other workspace. Throws when something still runs.
 */
export function removeWorkspaceCgroup(dir: string): void {
  removeChildCgroups(dir);
  if (!removeCgroup(dir)) throw new Error(`cgroup ${dir} still holds processes ${processesIn(dir).join(", ")}`);
  removeCgroup(dirname(dir));
}

/** Removes the (empty) execution cgroups under a workspace's; one still in use stays. */
export function removeChildCgroups(dir: string): void {
  for (const child of childCgroups(dir)) removeCgroup(join(dir, child));
}
