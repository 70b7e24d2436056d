/**
 * The launch: the one place a workload is spawned (pipes and PTY both come here). The workload
 * starts already contained, and its identity is durable before it can do anything:
 *
 * - cgroup: inside one write transaction (pause and destroy cancel reservations in theirs),
 *   the wrapper re-checks its reservation, spawns inside the execution's cgroup (CgroupScope
 *   spawnInside: the child inherits the cgroup at fork), and records the pid. The
 *   cgroup itself was recorded with the reservation, so a wrapper killed at any instant
 *   leaves nothing outside a cgroup on record; and once a cancel commits, no wrapper is left
 *   inside the workspace's cgroup, so killing that cgroup never kills a wrapper.
 * - process group: the wrapper spawns the launch gate (containment/gate.ts), records its pid,
 *   and only then tells it what to become.
 * - sandbox (isolation "sandbox", Linux): launchSandboxed below.
 */
import type { Subprocess } from "bun";
import { diagnose } from "../output.ts";
import type { CgroupScope } from "../containment/cgroup-scope.ts";
import { Gate } from "../containment/gate.ts";
import { GroupScope } from "../containment/group-scope.ts";
import { SandboxScope } from "../containment/sandbox-scope.ts";
import { SandboxedWorkload, SandboxRefused } from "../sandbox/sandboxed-workload.ts";
import type { Launch } from "../sandbox/view.ts";
import type { ExecutionScope } from "../containment/scope.ts";
import { spawnDirectory } from "../platform/directory.ts";
import { hasErrno } from "../platform/errno.ts";
import { GroupHandle } from "../platform/pidfd.ts";
import { bootId, readProcess, type ProcessIdentity, type ProcessInfo } from "../platform/process.ts";
import { writeTransaction } from "../store/db.ts";
import { checkLeader } from "./identity.ts";
import { releaseDirectories, type LaunchPlan } from "./plan.ts";
import { ProgramError } from "./program.ts";
import { finishRecord, recordLeader, whileReserved } from "./record.ts";
import { mark } from "../trace.ts";
import { logLine } from "../log/runtime-log.ts";

/** How pipes.ts and pty.ts want the child's stdio: inherited descriptors, or a fresh terminal. */
type StdioShape = { stdio: ["inherit", "inherit", "inherit"]; detached: true } | { terminal: Bun.TerminalOptions };

/** What the modes follow of the workload's leader: the spawned process, or (sandbox) the init's word on it. */
type WorkloadProcess = Pick<Subprocess, "exited" | "exitCode" | "signalCode" | "terminal">;

export interface Launched {
  proc: WorkloadProcess;
  leader: ProcessIdentity;
  /** What holds it: the exit cleanup ends it, a protocol failure kills it, PTY output holds it still. */
  scope: ExecutionScope;
  /** Whether a signal may still go to the leader's group: its number cannot have been reused. */
  mayForward(): boolean;
}

/** Until Bun reaps the leader (our own child) its group id cannot be reused. */
function whileUnreaped(proc: Subprocess): () => boolean {
  return () => proc.exitCode === null && proc.signalCode === null;
}

/** Nothing was launched: the reservation is finished and the execution's cgroup removed. */
export function releaseReservation(plan: LaunchPlan): void {
  finishRecord(plan);
  plan.cgroup?.remove();
}

/** A spawn that threw (ENOENT, EACCES…): release the reservation and explain. */
function launchFailed(plan: LaunchPlan, error: unknown): ProgramError {
  releaseReservation(plan);
  const code = hasErrno(error, ["ENOENT"]) ? 127 : 126;
  return new ProgramError(`cannot launch ${JSON.stringify(plan.envelope.argv[0])}: ${(error as Error).message}`, code);
}

/** pause or destroy finished the reservation first: nothing was, or will be, launched. */
function cancelled(plan: LaunchPlan): ProgramError {
  plan.cgroup?.remove();
  return new ProgramError(`workspace ${JSON.stringify(plan.workspaceId)} was paused or destroyed while the workload launched; nothing was launched`, 1);
}

/**
 * Spawns the workload under the plan's containment, in the directory the plan holds open
 * (spawnDirectory), and releases that directory once the spawn returned. Throws ProgramError
 * when nothing runs; a way out opened for it (an allowlist's proxy) is closed then, here.
 */
export async function launchWorkload(plan: LaunchPlan, shape: StdioShape): Promise<Launched> {
  try {
    if (plan.sandbox) return await launchSandboxed(plan, plan.sandbox, shape);
    return plan.cgroup ? await launchInCgroup(plan, plan.cgroup, shape) : await launchThroughGate(plan, shape);
  } catch (error) {
    await closeEgress(plan);
    throw error;
  }
}

async function launchInCgroup(plan: LaunchPlan, cgroup: CgroupScope, shape: StdioShape): Promise<Launched> {
  if (plan.origin === null) {
    releaseDirectories(plan);
    throw launchFailed(plan, new Error("this process's own cgroup is not visible"));
  }
  const origin = plan.origin.dir;
  // The kernel's grace period is paid before the write lock is taken, not while holding it.
  await plan.origin.primed;
  mark("prime awaited");
  let proc: Subprocess | undefined;
  let leader: ProcessIdentity | null;
  try {
    leader = whileReserved(plan, () => {
      proc = cgroup.spawnInside(origin, () => Bun.spawn([plan.program, ...plan.argv.slice(1)], { argv0: plan.argv[0], cwd: spawnDirectory(plan.cwdFd), env: plan.env, ...shape }));
      const info = checkLeader(readProcess(proc.pid), proc.pid, plan.wrapperStartTicks);
      recordLeader(plan, proc.pid, info.startTicks);
      return { pid: proc.pid, startTicks: info.startTicks, bootId: bootId() };
    });
  } catch (error) {
    // The transaction rolled back; whatever was spawned is in the cgroup: end it there.
    if (proc) {
      cgroup.kill();
      proc.terminal?.close();
    }
    throw launchFailed(plan, error);
  } finally {
    releaseDirectories(plan);
  }
  mark("launch transaction");
  if (!leader || !proc) throw cancelled(plan);
  return { proc, leader, scope: cgroup, mayForward: whileUnreaped(proc) };
}

async function launchThroughGate(plan: LaunchPlan, shape: StdioShape): Promise<Launched> {
  const gate = new Gate();
  let launch: Launch;
  let proc: Subprocess;
  try {
    launch = await gateLaunch(plan);
    proc = gate.spawn(spawnDirectory(plan.cwdFd), "terminal" in shape ? shape.terminal : null);
  } catch (error) {
    if (error instanceof ProgramError) throw error;
    throw launchFailed(plan, error);
  } finally {
    releaseDirectories(plan);
  }
  // Opened while the gate is our unreaped child: this handle names its group for good.
  const group = GroupHandle.open(proc.pid);
  let info: ProcessInfo;
  try {
    info = checkLeader(readProcess(proc.pid), proc.pid, plan.wrapperStartTicks);
  } catch (error) {
    proc.kill("SIGKILL");
    await gate.abandon();
    group?.close();
    proc.terminal?.close();
    throw launchFailed(plan, error);
  }
  const recorded = writeTransaction(plan.store.db, () => recordLeader(plan, proc.pid, info.startTicks));
  if (!recorded) {
    await gate.abandon();
    group?.close();
    proc.terminal?.close();
    finishRecord(plan);
    throw cancelled(plan);
  }
  const failure = await gate.open(launch);
  const leader = { pid: proc.pid, startTicks: info.startTicks, bootId: bootId() };
  if (failure) {
    proc.kill("SIGKILL");
    await proc.exited;
    group?.close();
    proc.terminal?.close();
    finishRecord(plan);
    throw new ProgramError(`cannot launch ${JSON.stringify(plan.envelope.argv[0])}: ${failure.message}`, failure.code);
  }
  // The leader proves its group and session while it runs; once it was reaped, the handle
  // taken at spawn still does, for as long as any member of its group exists.
  return { proc, leader, scope: new GroupScope(leader, { handle: group }), mayForward: whileUnreaped(proc) };
}

/**
 * The sandbox: what is spawned is bwrap (prepare.ts made the plan's program its), in the
 * execution's cgroup when there is one; the workload is the sandbox init's child, found through
 * the init's first report (sandbox/sandboxed-workload.ts), and its identity is what is recorded. No gate is
 * needed: bwrap dies with the wrapper (--die-with-parent), so a wrapper killed before the record
 * leaves nothing running. Once the workload exists, the sandbox's own processes (bwrap, its
 * init and the sandbox init) leave the execution's cgroup for the wrapper's: the cgroup then
 * holds exactly the workload's processes, so a signal or cgroup.kill for the execution never
 * ends the init before it reported the workload's exact end.
 */
async function launchSandboxed(plan: LaunchPlan, sandbox: NonNullable<LaunchPlan["sandbox"]>, shape: StdioShape): Promise<Launched> {
  const spawnOptions = { argv0: plan.argv[0], env: plan.env, stdio: sandbox.stdio, ...("terminal" in shape ? { terminal: shape.terminal } : { detached: true }) };
  const spawn = () => Bun.spawn([plan.program, ...plan.argv.slice(1)], { ...spawnOptions, cwd: spawnDirectory(plan.cwdFd) } as Parameters<typeof Bun.spawn>[1]);
  let proc: Subprocess | undefined;
  try {
    // The way out first: its socket must exist for bwrap to show it, and the workload must never run without it.
    await openEgressOf(plan);
    if (plan.cgroup) {
      if (plan.origin === null) throw new Error("this process's own cgroup is not visible");
      const [cgroup, origin] = [plan.cgroup, plan.origin.dir];
      await plan.origin.primed;
      const allowed = whileReserved(plan, () => {
        proc = cgroup.spawnInside(origin, spawn);
        return true;
      });
      if (!allowed) throw cancelled(plan);
    } else proc = spawn();
  } catch (error) {
    if (plan.cgroup && proc) plan.cgroup.kill();
    proc?.kill("SIGKILL");
    proc?.terminal?.close();
    if (error instanceof ProgramError) throw error;
    throw launchFailed(plan, error);
  } finally {
    releaseDirectories(plan);
  }
  mark("bwrap spawned");
  const bwrap = proc!;
  const workload = new SandboxedWorkload(bwrap, sandbox.request);
  let group: GroupHandle | null = null;
  let leader: ProcessIdentity;
  try {
    await workload.start();
    mark("sandbox init reported");
    // The init blocks until `recorded`: the workload's pid is the workload's until then.
    plan.cgroup?.moveOut(workload.machinery, plan.origin!.dir);
    const info = checkLeader(readProcess(workload.pid), workload.pid, plan.wrapperStartTicks, sandbox.request.mode === "pipes");
    leader = { pid: workload.pid, startTicks: info.startTicks, bootId: bootId() };
    group = GroupHandle.open(workload.pid);
    if (!writeTransaction(plan.store.db, () => recordLeader(plan, leader.pid, leader.startTicks))) throw cancelled(plan);
  } catch (error) {
    workload.kill();
    // The launch failed and says why below; a cleanup failing on top of it is reported, not thrown.
    await workload.release().catch((cleanup: Error) => diagnose(`the sandbox of a failed launch did not end cleanly: ${cleanup.message}`));
    if (plan.cgroup) await plan.cgroup.end(0).catch((cleanup: Error) => diagnose(`cannot end the cgroup of a failed launch: ${cleanup.message}`));
    group?.close();
    bwrap.terminal?.close();
    releaseReservation(plan);
    if (error instanceof ProgramError) throw error;
    if (error instanceof SandboxRefused) throw new ProgramError(error.message, error.code);
    throw new ProgramError(`cannot launch ${JSON.stringify(plan.envelope.argv[0])} in the sandbox: ${(error as Error).message}`, 1);
  }
  mark("sandbox launch recorded");
  workload.confirmed();
  const base = plan.cgroup ?? new GroupScope(leader, { handle: group });
  return { proc: workload, leader, scope: new SandboxScope(workload, base, group), mayForward: () => workload.mayForward() };
}

/**
 * What the gate execs: the plan's launch; under an allowlist on macOS, sandbox-exec with the
 * profile naming the proxy's port, which exists only once the proxy listens.
 */
async function gateLaunch(plan: LaunchPlan): Promise<Launch> {
  const port = await openEgressOf(plan);
  const launchAt = plan.egress?.launchAt;
  if (!launchAt) return { program: plan.program, argv: plan.argv, env: plan.env };
  if (port === null) throw launchFailed(plan, new Error("the network proxy has no loopback port for the sandbox profile"));
  return launchAt(port);
}

/**
 * Under an allowlist, the execution's way out, opened before anything is spawned: the workload
 * never runs without it. Loaded only here: an exec without an allowlist evaluates none of the
 * proxy's modules. Returns the proxy's loopback port where it has no socket (macOS).
 */
async function openEgressOf(plan: LaunchPlan): Promise<number | null> {
  const egress = plan.egress;
  if (!egress) return null;
  egress.opened = await import("../sandbox/network/egress.ts")
    .then(({ openEgress }) => openEgress(egress.plan))
    .catch((error: Error) => {
      releaseReservation(plan);
      throw new ProgramError(`the sandbox's network policy could not be set up (${error.message}); nothing was launched`, 1);
    });
  mark("egress opened");
  return egress.opened.port;
}

/** The execution's way out under an allowlist, closed once its workload ended (or never started); a failure to close is logged (stderr may be the workload's by then), not thrown. */
export async function closeEgress(plan: LaunchPlan): Promise<void> {
  const egress = plan.egress;
  if (!egress?.opened) return;
  const opened = egress.opened;
  egress.opened = null;
  await opened.close().catch((error: Error) => logLine("error", "net-error", { message: `the sandbox's network proxy did not close cleanly: ${error.message}` }));
}
