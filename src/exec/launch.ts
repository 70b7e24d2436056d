import type { Subprocess } from "bun";
import { markFinished } from "../store/executions.ts";
import type { LaunchPlan } from "./prepare.ts";
import { ProgramError } from "./program.ts";
import { SandboxedWorkload } from "./sandboxed.ts";
import { directWorkload, type Launched } from "./workload.ts";

/** A spawn that threw (ENOENT, EACCES…): release the reservation and explain. */
export function launchFailed(plan: LaunchPlan, error: unknown): ProgramError {
  markFinished(plan.store.db, plan.workspaceId, plan.execId);
  const err = error as NodeJS.ErrnoException;
  const code = err.code === "ENOENT" ? 127 : 126;
  return new ProgramError(`cannot launch ${JSON.stringify(plan.envelope.argv[0])}: ${err.message}`, code);
}

/**
 * After the spawn: the workload to follow. In the Linux sandbox that waits for the sandbox
 * init's first report; a launch that failed inside (bwrap refused, program missing, cwd
 * replaced) is a ProgramError like a spawn that threw: nothing ran, the reservation is released.
 */
export async function launched(plan: LaunchPlan, proc: Subprocess): Promise<Launched> {
  if (!plan.sandbox) return directWorkload(proc);
  const workload = new SandboxedWorkload(proc, plan.sandbox.request);
  try {
    await workload.start();
  } catch (error) {
    markFinished(plan.store.db, plan.workspaceId, plan.execId);
    if (error instanceof ProgramError) throw error;
    throw new ProgramError(`cannot launch ${JSON.stringify(plan.envelope.argv[0])} in the sandbox: ${(error as Error).message}`, 1);
  }
  return workload;
}
