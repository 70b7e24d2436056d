import type { Invocation } from "../cli.ts";
import { isSignalName } from "../exec/mirror.ts";
import { identityOf } from "../workspace/executions.ts";
import { signalAndWait } from "../platform/process-group.ts";
import { withExistingStore } from "../store/db.ts";
import { getExecution, markFinished } from "../store/executions.ts";
import { getWorkspace } from "../store/workspaces.ts";
import { assertOwner } from "../workspace/owner.ts";
import { readLifecycleCall } from "./request.ts";

/** How long `signal` waits for a workload to be gone after SIGKILL; other signals wait options.stopTimeoutMs. */
const KILL_WAIT_MS = 5000;

/**
 * `signal`: the daemon's bounded cleanup path. Finds the workload by workspace + exec id,
 * verifies it is still the same process, signals its group and session, and returns only once
 * every member is gone. Works after the wrapper died; idempotent.
 */
export async function signal(invocation: Invocation): Promise<number> {
  const { options, owner } = readLifecycleCall();
  const workspaceId = invocation.flags.get("workspace-id")!;
  const execId = invocation.flags.get("exec-id")!;
  const name = invocation.flags.get("signal")!;
  if (!isSignalName(name)) {
    throw new Error(`unknown signal ${JSON.stringify(name)}: give a name such as SIGKILL or SIGTERM`);
  }
  const notReady = (): number => {
    throw new Error(`execution identity ${JSON.stringify(execId)} of workspace ${JSON.stringify(workspaceId)} is not ready (never started)`);
  };
  return withExistingStore(options, async ({ db }) => {
    const workspace = getWorkspace(db, workspaceId);
    if (workspace) assertOwner(workspace, owner);
    const record = getExecution(db, workspaceId, execId);
    if (!record || record.pid === 0) return notReady();
    if (record.finishedAt !== null) return 0;
    const waitMs = name === "SIGKILL" ? KILL_WAIT_MS : options.stopTimeoutMs;
    if (!(await signalAndWait(identityOf(record), name, waitMs))) {
      throw new Error(`execution ${JSON.stringify(execId)} is still running ${waitMs} ms after ${name}`);
    }
    markFinished(db, workspaceId, execId);
    return 0;
  }, notReady);
}
