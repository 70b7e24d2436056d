import type { Invocation } from "../argv.ts";
import { stopWorkspaceExecutions } from "../containment/executions.ts";
import { withStore } from "../store/db.ts";
import { claimExisting, reapOrphanChild, releaseLock } from "../workspace/lock.ts";
import { respond } from "../protocol/request.ts";
import { readLifecycleCall } from "../workspace/call.ts";

/**
 * `pause` preserves workspace state: it marks the workspace paused first (so no new exec
 * starts), then stops every live execution (SIGTERM to each identity-checked process group,
 * up to options.stopTimeoutMs, then SIGKILL) and returns only when all are gone. Files are
 * never touched. Pausing a paused workspace answers ok (and still stops stragglers).
 */
export async function pause(invocation: Invocation): Promise<number> {
  const { options, owner } = readLifecycleCall();
  const workspaceId = invocation.flags.get("workspace-id")!;
  return withStore(options, async ({ db }) => {
    const previous = await claimExisting(db, workspaceId, owner, "pause", "paused");
    try {
      await reapOrphanChild(db, previous);
      await stopWorkspaceExecutions(db, workspaceId, options.stopTimeoutMs, previous.cgroup);
    } finally {
      releaseLock(db, workspaceId);
    }
    respond({ type: "ok", protocolVersion: 1 }, owner.dialect);
    return 0;
  });
}
