import type { Invocation } from "../cli.ts";
import { reapAbandonedExecutions } from "../workspace/executions.ts";
import { withStore } from "../store/db.ts";
import { getWorkspace, listWorkspaces } from "../store/workspaces.ts";
import { destroyWorkspace } from "../workspace/destroy.ts";
import { isAbandoned, liveHolder } from "../workspace/lock.ts";
import { readLifecycleCall, respond } from "./request.ts";

/**
 * `reconcile`: first check, then act. A listed id recorded under another owner fails the
 * whole call before anything changes. Then every workspace of this owner that is not listed
 * is destroyed (a create still running is left alone), leftovers of interrupted creates and
 * destroys are cleaned up, and abandoned executions are reaped. Other owners' workspaces are
 * never touched.
 */
export async function reconcile(_invocation: Invocation): Promise<number> {
  const { request, options } = readLifecycleCall();
  const { owner } = options;
  const listed = request.workspaceIds;
  if (!listed) throw new Error("reconcile needs `workspaceIds` in the lifecycle request (the ids the daemon still knows; [] for none)");
  return withStore(options, async ({ db, home }) => {
    const foreign = listed.filter((id) => {
      const record = getWorkspace(db, id);
      return record !== null && record.owner !== owner;
    });
    if (foreign.length > 0) {
      const names = foreign.map((id) => `${JSON.stringify(id)} (owner ${JSON.stringify(getWorkspace(db, id)?.owner)})`).join(", ");
      throw new Error(`ownership mismatch: listed workspace ${names} belongs to another owner than ${JSON.stringify(owner)}; nothing was changed`);
    }
    const keep = new Set(listed);
    for (const record of listWorkspaces(db, owner)) {
      const interrupted = (record.status === "creating" || record.status === "destroying") && (record.lock === null || isAbandoned(record));
      const orphan = !keep.has(record.workspaceId) && !(record.status === "creating" && liveHolder(record));
      if (orphan || interrupted) await destroyWorkspace(db, home, record.workspaceId, owner);
    }
    await reapAbandonedExecutions(db, owner);
    respond({ type: "ok", protocolVersion: 1 });
    return 0;
  });
}
