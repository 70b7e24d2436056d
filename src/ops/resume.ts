import type { Invocation } from "../cli.ts";
import { openStore } from "../store/db.ts";
import { getWorkspace, updateWorkspace } from "../store/workspaces.ts";
import { claimExisting, reapOrphanChild, releaseLock, write } from "../workspace/lock.ts";
import { ownerOf } from "../workspace/owner.ts";
import { restoreRoot } from "../workspace/restore.ts";
import { lifecycleSettings } from "../workspace/settings.ts";
import { stateResponse } from "../workspace/state.ts";
import { readLifecycleRequest, respond } from "./request.ts";

/**
 * `resume`: paused → ready, ready → ready. The root is checked again; a worktree whose
 * directory vanished is re-added for its branch. Missing → error.
 */
export async function resume(invocation: Invocation): Promise<number> {
  const request = readLifecycleRequest();
  const workspaceId = invocation.flags.get("workspace-id")!;
  const owner = ownerOf(request.options);
  const settings = lifecycleSettings(request.options);
  const { db } = openStore(request.options);
  try {
    const previous = await claimExisting(db, workspaceId, owner, "resume");
    try {
      await reapOrphanChild(db, previous);
      await restoreRoot(db, previous);
      write(db, () => updateWorkspace(db, workspaceId, { status: "ready" }));
    } finally {
      releaseLock(db, workspaceId);
    }
    respond(stateResponse(getWorkspace(db, workspaceId)!, settings));
    return 0;
  } finally {
    db.close();
  }
}
