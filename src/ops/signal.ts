import type { Invocation } from "../cli.ts";
import { signalNumber } from "../exec/mirror.ts";
import { identityOf } from "../workspace/executions.ts";
import { signalAndWait } from "../platform/process-group.ts";
import { withStore } from "../store/db.ts";
import { getExecution, markFinished } from "../store/executions.ts";
import { getWorkspace } from "../store/workspaces.ts";
import { assertOwner, ownerOf } from "../workspace/owner.ts";
import { readLifecycleRequest } from "./request.ts";

/** How long `signal` waits for a workload to be gone: SIGKILL is quick, others get a grace. */
const KILL_WAIT_MS = 5000;
const DEFAULT_WAIT_MS = 2000;

/**
 * `signal`: the daemon's bounded cleanup path. Finds the workload by workspace + exec id,
 * verifies it is still the same process, signals its group and session, and returns only once
 * every member is gone. Works after the wrapper died; idempotent.
 */
export async function signal(invocation: Invocation): Promise<number> {
  const request = readLifecycleRequest();
  const workspaceId = invocation.flags.get("workspace-id")!;
  const execId = invocation.flags.get("exec-id")!;
  const name = invocation.flags.get("signal")!;
  if (!/^SIG[A-Z0-9]+$/.test(name) || signalNumber(name) === undefined) {
    throw new Error(`unknown signal ${JSON.stringify(name)}: give a name such as SIGKILL or SIGTERM`);
  }
  const owner = ownerOf(request.options);
  return withStore(request.options, async ({ db }) => {
    const workspace = getWorkspace(db, workspaceId);
    if (workspace) assertOwner(workspaceId, workspace.owner, owner);
    const record = getExecution(db, workspaceId, execId);
    if (!record || record.pid === 0) {
      throw new Error(`execution identity ${JSON.stringify(execId)} of workspace ${JSON.stringify(workspaceId)} is not ready (never started)`);
    }
    if (record.finishedAt !== null) return 0;
    const waitMs = name === "SIGKILL" ? KILL_WAIT_MS : Number(request.options.stopTimeoutMs ?? DEFAULT_WAIT_MS);
    if (!(await signalAndWait(identityOf(record), name as NodeJS.Signals, waitMs))) {
      throw new Error(`execution ${JSON.stringify(execId)} is still running ${waitMs} ms after ${name}`);
    }
    markFinished(db, workspaceId, execId);
    return 0;
  });
}
