import type { Invocation } from "../argv.ts";
import { requireSandbox } from "../sandbox/tool.ts";
import { withStore, writeTransaction } from "../store/db.ts";
import { resolveHome } from "../store/home.ts";
import { applyWorkspaceLimits } from "../containment/cgroup-tree.ts";
import { checkLimits, resolveContainment } from "../containment/resolve.ts";
import { getWorkspace, updateWorkspace } from "../store/workspaces.ts";
import { claimExisting, reapOrphanChild, releaseLock } from "../workspace/lock.ts";
import { restoreRoot } from "../workspace/restore.ts";
import { stateResponse } from "../workspace/state.ts";
import { respond } from "../protocol/request.ts";
import { readLifecycleCall } from "../workspace/call.ts";
import { requireIsolation } from "../sandbox/isolation.ts";
import { requestedIsolation } from "../sandbox/settings.ts";

/**
 * `resume`: paused → ready, ready → ready. The isolation asked for must be at least the one
 * recorded (sandbox/isolation.ts); the root is checked again; a worktree whose directory
 * vanished is re-added for its branch; the workspace cgroup's limits are written again (the
 * options may have changed). Missing → error.
 */
export async function resume(invocation: Invocation): Promise<number> {
  const { options, owner } = readLifecycleCall();
  // Fail closed: a workspace meant to be sandboxed is never made usable without a working sandbox.
  if (options.isolation === "sandbox") requireSandbox(options);
  const workspaceId = invocation.flags.get("workspace-id")!;
  const containment = resolveContainment(options, resolveHome(options));
  checkLimits(containment, options);
  return withStore(options, async ({ db }) => {
    const previous = await claimExisting(db, workspaceId, owner, "resume");
    try {
      const requested = requestedIsolation(options);
      requireIsolation(previous, requested, "changed");
      if (previous.isolation === null) writeTransaction(db, () => updateWorkspace(db, workspaceId, { isolation: requested }));
      await reapOrphanChild(db, previous);
      await restoreRoot(db, previous);
      applyWorkspaceLimits(db, workspaceId, previous.cgroup, containment, options);
      writeTransaction(db, () => updateWorkspace(db, workspaceId, { status: "ready" }));
    } finally {
      releaseLock(db, workspaceId);
    }
    respond(stateResponse(getWorkspace(db, workspaceId)!, options, owner.dialect), owner.dialect);
    return 0;
  });
}
