import type { SpawnEnvelope } from "../protocol/index.ts";
import { CgroupScope, originFor } from "../containment/cgroup-scope.ts";
import { selfIdentity } from "../platform/process.ts";
import { sandboxTool, SandboxUnavailable } from "../sandbox/tool.ts";
import { openStore, type Store } from "../store/db.ts";
import type { Reservation } from "../store/executions.ts";
import { updateWorkspace } from "../store/workspaces.ts";
import { whileReady } from "../workspace/access.ts";
import { endedExecutions, settleEnded } from "../containment/executions.ts";
import { WriterLockStalled } from "../store/writer-lock.ts";
import type { OpenRoot } from "../workspace/confinement.ts";
import { executionCgroupsOf, makeExecutionCgroup } from "../containment/cgroup-tree.ts";
import { checkLimits, resolveContainment } from "../containment/resolve.ts";
import { readOptions, type RuntimeOptions } from "../options.ts";
import { closeDescriptor } from "../platform/directory.ts";
import type { WorkspaceRecord } from "../store/workspaces.ts";
import { ownershipOf, type Ownership } from "../workspace/owner.ts";
import { checkRelativePath, joinInside, openInside } from "../workspace/paths.ts";
import { requireIsolation } from "../sandbox/isolation.ts";
import { requestedIsolation } from "../sandbox/settings.ts";
import { helperFiles, helperLaunch, resolveHelper } from "./helper.ts";
import { ProgramError, resolveProgram } from "./program.ts";
import { releaseDirectories, type LaunchPlan, type ResolvedLaunch } from "./plan.ts";
import { finishRecord, recordRefusal, reserveRecord } from "./record.ts";
import { isLinux } from "../platform/os.ts";
import { mark } from "../trace.ts";

/**
 * The workload's environment: exactly the envelope's, except that a PTY's `term` becomes TERM
 * when the envelope sets none (the single documented exception).
 */
export function workloadEnv(envelope: SpawnEnvelope): Record<string, string> {
  const env = { ...envelope.env };
  if (envelope.stdio.kind === "pty" && envelope.stdio.term !== undefined && !Object.hasOwn(env, "TERM")) {
    env.TERM = envelope.stdio.term;
  }
  return env;
}


/**
 * The file to execute (argv[0] through PATH, or the workspace helper's own resolution), and the
 * files it needs (for the sandbox to show; a JavaScript helper's are found by walking up its
 * path, work an unsandboxed exec does not do inside its write transaction). The later dialect
 * has no helperCommand: its helper must be on the workload's PATH, which for a host runtime is
 * the host's (the runtime's own, inherited from the daemon) since the call's env is {}.
 */
function resolveLaunch(envelope: SpawnEnvelope, owner: Ownership, options: RuntimeOptions, env: Record<string, string>, cwd: string): ResolvedLaunch {
  const name = envelope.argv[0]!;
  if (envelope.purpose.kind === "workspace-helper" && !name.includes("/")) {
    const hostPath = owner.dialect === "later" ? process.env.PATH : undefined;
    const helper = resolveHelper(name, env, cwd, options.helperPath, hostPath);
    return { ...helperLaunch(helper, envelope.argv, env), files: () => [process.execPath, ...helperFiles(helper)] };
  }
  const program = resolveProgram(name, env, cwd);
  return { program, argv: [...envelope.argv], env, files: () => [program] };
}

/** The sandbox tool, or null without isolation; its absence refuses the exec (exit 1) before anything is launched. */
function isolationTool(options: RuntimeOptions): string | null {
  if (options.isolation !== "sandbox") return null;
  try {
    return sandboxTool();
  } catch (error) {
    if (error instanceof SandboxUnavailable) throw new ProgramError(error.message, 1);
    throw error;
  }
}

/**
 * The sandbox's part of an exec (its git dir, its view, init and egress), loaded only by a
 * sandboxed exec: an unsandboxed one never evaluates those modules (~0.5–0.9 ms of every exec's
 * start-up, bench/README.md "Trimming each command's modules").
 */
async function sandboxParts() {
  const [{ sandboxed }, { gitForExec }] = await Promise.all([import("./sandboxed-launch.ts"), import("../sandbox/git/sandbox-git.ts")]);
  return { sandboxed, gitForExec };
}

/**
 * Checks containment, workspace, cwd and program, then claims the execution identity (with
 * the cgroup it will run in), all inside the one transaction that sees the workspace ready,
 * so pause and destroy cannot slip in between. The cgroup is made only once it is on record.
 * Whatever refuses the exec once the store is open, the identity ends up recorded as finished
 * (record.ts recordRefusal), so the daemon's cleanup `signal` finds it already clean.
 */
export async function prepareLaunch(workspaceId: string, envelope: SpawnEnvelope): Promise<LaunchPlan> {
  const options = readOptions(envelope.options);
  const origin = originFor(options);
  mark("options");
  const store = openStore(options);
  mark("store open");
  const self = selfIdentity();
  const owner = ownershipOf(envelope, options.owner);
  const reservation: Reservation = {
    workspaceId,
    execId: envelope.execId,
    mode: envelope.stdio.kind,
    purpose: envelope.purpose.kind,
    argv0: envelope.argv[0]!,
    bootId: self.bootId,
    wrapperPid: self.pid,
    wrapperStartTicks: self.startTicks,
  };
  try {
    return await claimLaunch(store, options, owner, reservation, envelope, origin);
  } catch (error) {
    // A store whose write lock is stuck would keep the refusal waiting as long again: the
    // identity then stays unrecorded, and `signal` calls it not ready.
    if (!(error instanceof WriterLockStalled)) recordRefusal(store, reservation, owner);
    throw error;
  }
}

async function claimLaunch(store: Store, options: RuntimeOptions, owner: Ownership, reservation: Reservation, envelope: SpawnEnvelope, origin: LaunchPlan["origin"]): Promise<LaunchPlan> {
  const { workspaceId, execId } = reservation;
  const tool = isolationTool(options);
  const parts = tool ? await sandboxParts() : null;
  const git = parts && isLinux ? refusingLaunch(() => parts.gitForExec(store, workspaceId, owner, options)) : null;
  const containment = refusingLaunch(() => {
    const found = resolveContainment(options, store.home);
    checkLimits(found, options);
    return found;
  });
  // Records their wrappers could not finish (a full disk) are finished here, by the kernel's
  // word: looked for before the write lock is taken, as that costs a /proc read per live execution.
  const ended = endedExecutions(store.db, workspaceId);
  mark("sandbox git, containment");
  const plan = whileReady(store.db, workspaceId, owner, (root, record) => {
    keepsIsolation(store, record, options);
    settleEnded(store.db, ended);
    const { cwd, cwdFd } = openCwd(root, envelope.cwd ?? "");
    let held: number[] = [];
    try {
      const resolved = resolveLaunch(envelope, owner, options, workloadEnv(envelope), cwd);
      const { launch, sandbox, egress } = tool && parts
        ? parts.sandboxed({ launch: resolved, tool, mode: envelope.stdio.kind, home: store.home, record, root, cwd: { path: cwd, fd: cwdFd }, options, git, execId })
        : { launch: resolved, sandbox: null, egress: null };
      held = sandbox?.held ?? [];
      const { program, argv, env } = launch;
      const where = executionCgroupsOf(store.db, record, execId, containment);
      reserveRecord(store.db, { ...reservation, cgroup: where?.execution ?? null });
      const rootDir = { path: root.path, fd: root.fd };
      const cgroup = where ? new CgroupScope(where.execution) : null;
      return { workspaceId, execId, envelope, store, root: rootDir, cwd, cwdFd, program, argv, env, sandbox, egress, wrapperStartTicks: reservation.wrapperStartTicks, cgroup, origin, where };
    } catch (error) {
      if (cwdFd !== root.fd) closeDescriptor(cwdFd);
      for (const fd of held) closeDescriptor(fd);
      throw error;
    }
  });
  mark("reservation");
  if (plan.where && containment.kind === "cgroup") {
    try {
      makeExecutionCgroup(containment, options, plan.where);
    } catch (error) {
      finishRecord(plan);
      releaseDirectories(plan);
      refusingLaunch(() => {
        throw error;
      });
    }
  }
  mark("cgroup mkdir");
  return plan;
}

/**
 * A workspace keeps its isolation (sandbox/isolation.ts): an exec asking for less is refused
 * before launch; a workspace of before schema 3 records what its first exec asks (inside the
 * caller's transaction).
 */
function keepsIsolation(store: Store, record: WorkspaceRecord, options: RuntimeOptions): void {
  const requested = requestedIsolation(options);
  requireIsolation(record, requested, "launched");
  if (record.isolation === null) updateWorkspace(store.db, record.workspaceId, { isolation: requested });
}

/**
 * `fn()`, whose failure refuses the exec before anything runs (exit 1, reason and fix on
 * stderr): what containment needs, and the sandbox's git dir brought up to date.
 */
function refusingLaunch<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof ProgramError) throw error;
    throw new ProgramError(`cannot launch: ${(error as Error).message}`, 1);
  }
}

/** The envelope's cwd beneath the root: its path, and a descriptor of exactly that directory. */
function openCwd(root: OpenRoot, relative: string): { cwd: string; cwdFd: number } {
  checkRelativePath(relative, "cwd");
  const cwd = joinInside(root.path, relative);
  return { cwd, cwdFd: cwd === root.path ? root.fd : openInside(root.fd, root.path, relative, "cwd") };
}
