/**
 * The execution record's one gateway: every write the wrapper makes of it goes through here.
 * The reservation (made by prepare.ts inside the transaction that sees the workspace ready),
 * the launch that turns it into a running workload's identity, its end, and a refusal.
 *
 * The record's end: fd 4 is authoritative, the store is not. A store that refuses a write
 * (disk full, read-only) never keeps `eof` and `exit` from the daemon, nor the wrapper from
 * mirroring the real status. What could not be written is said on stderr, and the record is
 * finished later, from what the kernel says, by the next exec of the workspace, `signal`,
 * pause, destroy or reconcile (containment/executions.ts settleEnded).
 *
 * The launch: the one place a workload is spawned (pipes and PTY both come here). The workload
 * starts already contained, and its identity is durable before it can do anything:
 *
 * - cgroup: inside one write transaction (pause and destroy cancel reservations in theirs),
 *   the wrapper re-checks its reservation, moves itself into the execution's cgroup, spawns
 *   (the child inherits the cgroup at fork), moves itself back, and records the pid. The
 *   cgroup itself was recorded with the reservation, so a wrapper killed at any instant
 *   leaves nothing outside a cgroup on record; and once a cancel commits, no wrapper is left
 *   inside the workspace's cgroup, so killing that cgroup never kills a wrapper.
 * - process group: the wrapper spawns the launch gate (gate.ts), records its pid, and only
 *   then tells it what to become.
 * - sandbox (isolation "sandbox", Linux): launchSandboxed below.
 */
import type { Database } from "bun:sqlite";
import type { Subprocess } from "bun";
import { diagnose } from "../output.ts";
import { CgroupScope, endCgroup } from "../containment/cgroup-scope.ts";
import { GroupScope } from "../containment/group-scope.ts";
import { SandboxScope } from "../containment/sandbox-scope.ts";
import type { ExecutionScope } from "../containment/scope.ts";
import { killCgroup, moveInto, removeCgroup } from "../platform/cgroup.ts";
import { spawnDirectory } from "../platform/directory.ts";
import { hasErrno } from "../platform/errno.ts";
import { GroupHandle } from "../platform/pidfd.ts";
import { bootId, readProcess, type ProcessIdentity, type ProcessInfo } from "../platform/process.ts";
import type { ExitStatus } from "../protocol/index.ts";
import { storeWriteProblem, writeTransaction, type Store } from "../store/db.ts";
import { markFinished, mayLaunch, recordLaunch, recordRefused, reserveExecution, type Reservation } from "../store/executions.ts";
import { getWorkspace } from "../store/workspaces.ts";
import { ownershipProblem, type Ownership } from "../workspace/owner.ts";
import { Gate } from "../containment/gate.ts";
import { checkLeader } from "./identity.ts";
import { releaseDirectories, type LaunchPlan } from "./plan.ts";
import { ProgramError } from "./program.ts";
import { SandboxedWorkload, SandboxRefused } from "../containment/sandboxed.ts";

/** Where the record is: the plan's store and identity. */
interface RecordOf {
  store: Store;
  workspaceId: string;
  execId: string;
}

/**
 * Marks the execution finished (with its outcome when it ran); a store failure is reported, not
 * thrown. The store is looked at first (db.ts storeWriteProblem): written through this
 * process's old mappings, a store the kernel now refuses would kill the wrapper (SIGBUS) before
 * `exit` reached fd 4. False when the store could not be written: then it must not be touched
 * again, not even closed (closing checkpoints through the same mapping).
 */
export function finishRecord(plan: RecordOf, outcome?: ExitStatus): boolean {
  const unwritable = storeWriteProblem(plan.store.db.filename);
  try {
    if (unwritable !== null) throw new Error(unwritable);
    markFinished(plan.store.db, plan.workspaceId, plan.execId, outcome);
  } catch (error) {
    diagnose(`cannot record the end of execution ${JSON.stringify(plan.execId)} in the store (${(error as Error).message}); the next exec, signal, pause, destroy or reconcile of workspace ${JSON.stringify(plan.workspaceId)} finishes the record`);
  }
  if (unwritable !== null) plan.store.abandoned = true;
  return unwritable === null;
}

/**
 * An exec refused before anything launched: its identity is recorded as finished, so the
 * daemon's cleanup `signal` for it answers "already clean" instead of "not ready". Never in a
 * workspace of another owner (refusing it changes nothing of theirs), never over a record that
 * exists (a reused identity keeps its own). A workspace that does not exist (yet) gets the
 * record too: nothing can ever run under that identity, and destroy or reconcile drops it.
 */
export function recordRefusal(store: Store, reservation: Reservation, owner: Ownership): void {
  try {
    writeTransaction(store.db, () => {
      const workspace = getWorkspace(store.db, reservation.workspaceId);
      if (workspace && ownershipProblem(workspace, owner) !== null) return;
      recordRefused(store.db, reservation);
    });
  } catch (error) {
    diagnose(`cannot record the refused execution ${JSON.stringify(reservation.execId)} in the store (${(error as Error).message}); signal will call it not ready`);
  }
}

/**
 * Claims the execution identity (with the cgroup it will run in) in the caller's write
 * transaction, the one that saw the workspace ready. Throws when the identity was used before.
 */
export function reserveRecord(db: Database, reservation: Reservation & { cgroup: string | null }): void {
  reserveExecution(db, reservation);
}

/**
 * Runs `spawn` inside one write transaction, only while the reservation still stands (pause
 * and destroy cancel reservations in theirs); null when it was cancelled first.
 */
function whileReserved<T>(plan: LaunchPlan, spawn: () => T): T | null {
  return writeTransaction(plan.store.db, () => (mayLaunch(plan.store.db, plan.workspaceId, plan.execId) ? spawn() : null));
}

/** Records the workload's leader (in the caller's transaction); false when pause or destroy finished the reservation first. */
function recordLeader(plan: LaunchPlan, pid: number, startTicks: number): boolean {
  return recordLaunch(plan.store.db, plan.workspaceId, plan.execId, pid, pid, startTicks);
}

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

/** A spawn that threw (ENOENT, EACCES…): release the reservation and explain. */
function launchFailed(plan: LaunchPlan, error: unknown): ProgramError {
  finishRecord(plan);
  if (plan.cgroup) removeCgroup(plan.cgroup);
  const code = hasErrno(error, ["ENOENT"]) ? 127 : 126;
  return new ProgramError(`cannot launch ${JSON.stringify(plan.envelope.argv[0])}: ${(error as Error).message}`, code);
}

/** pause or destroy finished the reservation first: nothing was, or will be, launched. */
function cancelled(plan: LaunchPlan): ProgramError {
  if (plan.cgroup) removeCgroup(plan.cgroup);
  return new ProgramError(`workspace ${JSON.stringify(plan.workspaceId)} was paused or destroyed while the workload launched; nothing was launched`, 1);
}

/**
 * Spawns the workload under the plan's containment, in the directory the plan holds open
 * (spawnDirectory), and releases that directory once the spawn returned. Throws ProgramError
 * when nothing runs.
 */
export async function launchWorkload(plan: LaunchPlan, shape: StdioShape): Promise<Launched> {
  if (plan.sandbox) return await launchSandboxed(plan, plan.sandbox, shape);
  return plan.cgroup ? await launchInCgroup(plan, plan.cgroup, shape) : await launchThroughGate(plan, shape);
}

async function launchInCgroup(plan: LaunchPlan, cgroup: string, shape: StdioShape): Promise<Launched> {
  if (plan.origin === null) {
    releaseDirectories(plan);
    throw launchFailed(plan, new Error("this process's own cgroup is not visible"));
  }
  const origin = plan.origin.dir;
  // The kernel's grace period is paid before the write lock is taken, not while holding it.
  await plan.origin.primed;
  let proc: Subprocess | undefined;
  let leader: ProcessIdentity | null;
  try {
    leader = whileReserved(plan, () => {
      moveInto(cgroup, process.pid);
      try {
        proc = Bun.spawn([plan.program, ...plan.argv.slice(1)], { argv0: plan.argv[0], cwd: spawnDirectory(plan.cwdFd), env: plan.env, ...shape });
      } finally {
        comeBack(origin, cgroup);
      }
      const info = checkLeader(readProcess(proc.pid), proc.pid, plan.wrapperStartTicks);
      recordLeader(plan, proc.pid, info.startTicks);
      return { pid: proc.pid, startTicks: info.startTicks, bootId: bootId() };
    });
  } catch (error) {
    // The transaction rolled back; whatever was spawned is in the cgroup: end it there.
    if (proc) {
      killCgroup(cgroup);
      proc.terminal?.close();
    }
    throw launchFailed(plan, error);
  } finally {
    releaseDirectories(plan);
  }
  if (!leader || !proc) throw cancelled(plan);
  return { proc, leader, scope: new CgroupScope(cgroup), mayForward: whileUnreaped(proc) };
}

/**
 * Back to the wrapper's own cgroup. If even that fails, this process sits in the execution's
 * cgroup with the workload: killing that cgroup then ends both, and the record (pid 0, its
 * cgroup, a dead wrapper) tells signal, reconcile, pause and destroy where to look.
 */
function comeBack(origin: string, cgroup: string): void {
  try {
    moveInto(origin, process.pid);
  } catch (error) {
    killCgroup(cgroup);
    throw error;
  }
}

async function launchThroughGate(plan: LaunchPlan, shape: StdioShape): Promise<Launched> {
  const gate = new Gate();
  let proc: Subprocess;
  try {
    proc = gate.spawn(spawnDirectory(plan.cwdFd), "terminal" in shape ? shape.terminal : null);
  } catch (error) {
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
  const failure = await gate.open({ program: plan.program, argv: plan.argv, env: plan.env });
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
 * the init's first report (sandboxed.ts), and its identity is what is recorded. No gate is
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
    if (plan.cgroup) {
      if (plan.origin === null) throw new Error("this process's own cgroup is not visible");
      const [cgroup, origin] = [plan.cgroup, plan.origin.dir];
      await plan.origin.primed;
      const allowed = whileReserved(plan, () => {
        moveInto(cgroup, process.pid);
        try {
          proc = spawn();
        } finally {
          comeBack(origin, cgroup);
        }
        return true;
      });
      if (!allowed) throw cancelled(plan);
    } else proc = spawn();
  } catch (error) {
    if (plan.cgroup && proc) killCgroup(plan.cgroup);
    proc?.kill("SIGKILL");
    proc?.terminal?.close();
    if (error instanceof ProgramError) throw error;
    throw launchFailed(plan, error);
  } finally {
    releaseDirectories(plan);
  }
  const bwrap = proc!;
  const workload = new SandboxedWorkload(bwrap, sandbox.request);
  let group: GroupHandle | null = null;
  let leader: ProcessIdentity;
  try {
    await workload.start();
    // The init blocks until `recorded`: the workload's pid is the workload's until then.
    if (plan.cgroup) for (const pid of workload.machinery) moveInto(plan.origin!.dir, pid);
    const info = checkLeader(readProcess(workload.pid), workload.pid, plan.wrapperStartTicks, sandbox.request.mode === "pipes");
    leader = { pid: workload.pid, startTicks: info.startTicks, bootId: bootId() };
    group = GroupHandle.open(workload.pid);
    if (!writeTransaction(plan.store.db, () => recordLeader(plan, leader.pid, leader.startTicks))) throw cancelled(plan);
  } catch (error) {
    workload.kill();
    // The launch failed and says why below; a cleanup failing on top of it is reported, not thrown.
    await workload.release().catch((cleanup: Error) => diagnose(`the sandbox of a failed launch did not end cleanly: ${cleanup.message}`));
    if (plan.cgroup) await endCgroup(plan.cgroup, 0).catch((cleanup: Error) => diagnose(`cannot end the cgroup of a failed launch: ${cleanup.message}`));
    group?.close();
    bwrap.terminal?.close();
    finishRecord(plan);
    if (plan.cgroup) removeCgroup(plan.cgroup);
    if (error instanceof ProgramError) throw error;
    if (error instanceof SandboxRefused) throw new ProgramError(error.message, error.code);
    throw new ProgramError(`cannot launch ${JSON.stringify(plan.envelope.argv[0])} in the sandbox: ${(error as Error).message}`, 1);
  }
  workload.confirmed();
  const base = plan.cgroup ? new CgroupScope(plan.cgroup) : new GroupScope(leader, { handle: group });
  return { proc: workload, leader, scope: new SandboxScope(workload, base, group), mayForward: () => workload.mayForward() };
}
