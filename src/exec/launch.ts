import { markFinished } from "../store/executions.ts";
import type { LaunchPlan } from "./prepare.ts";
import { ProgramError } from "./program.ts";

/** A spawn that threw (ENOENT, EACCES…): release the reservation and explain. */
export function launchFailed(plan: LaunchPlan, error: unknown): ProgramError {
  markFinished(plan.store.db, plan.workspaceId, plan.execId);
  const err = error as NodeJS.ErrnoException;
  const code = err.code === "ENOENT" ? 127 : 126;
  return new ProgramError(`cannot launch ${JSON.stringify(plan.envelope.argv[0])}: ${err.message}`, code);
}
