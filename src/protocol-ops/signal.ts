import type { Invocation } from "../argv.ts";
import { isSameProcess } from "../platform/process.ts";
import { scopeOf, wrapperOf } from "../containment/executions.ts";
import { withExistingStore } from "../store/db.ts";
import { getExecution, markFinished } from "../store/executions.ts";
import { getWorkspace } from "../store/workspaces.ts";
import { requireOwner } from "../workspace/refusals.ts";
import { readLifecycleCall } from "../workspace/call.ts";

/** How long `signal` waits for a workload to be gone after SIGKILL; other signals wait options.stopTimeoutMs. */
const KILL_WAIT_MS = 5000;

/**
 * `signal`: the daemon's bounded cleanup path. Finds the execution by workspace + exec id and
 * signals everything of it — its cgroup, or (process groups) its group and session while its
 * leader proves them its own — and returns only once it is gone. Works after the wrapper
 * died, also when it died while launching; idempotent.
 */
export async function signal(invocation: Invocation): Promise<number> {
  const { options, owner } = readLifecycleCall();
  const workspaceId = invocation.flags.get("workspace-id")!;
  const execId = invocation.flags.get("exec-id")!;
  // A name of the signal table: cli.ts refused anything else as a usage error, before reading stdin.
  const name = invocation.flags.get("signal") as NodeJS.Signals;
  const notReady = (): number => {
    throw new Error(`execution identity ${JSON.stringify(execId)} of workspace ${JSON.stringify(workspaceId)} is not ready (never started)`);
  };
  return withExistingStore(options, async ({ db }) => {
    const workspace = getWorkspace(db, workspaceId);
    if (workspace) requireOwner(workspace, owner);
    const record = getExecution(db, workspaceId, execId);
    if (!record) return notReady();
    if (record.finishedAt !== null) return 0;
    // Claimed, not launched, and its wrapper still at it: nothing to signal yet.
    if (record.pid === 0 && isSameProcess(wrapperOf(record))) return notReady();
    const waitMs = name === "SIGKILL" ? KILL_WAIT_MS : options.stopTimeoutMs;
    if (!(await scopeOf(record).signal(name, waitMs))) {
      throw new Error(`execution ${JSON.stringify(execId)} is still running ${waitMs} ms after ${name}`);
    }
    markFinished(db, workspaceId, execId);
    return 0;
  }, notReady);
}
