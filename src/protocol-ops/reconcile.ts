import { heldGitOf } from "../sandbox/git/sandbox-git.ts";
import type { Database } from "bun:sqlite";
import type { Invocation } from "../argv.ts";
import { reapAbandonedExecutions } from "../containment/executions.ts";
import { now, withStore, writeTransaction } from "../store/db.ts";
import { deleteOrphanRecords } from "../store/executions.ts";
import { getWorkspace, listWorkspaces, updateWorkspace } from "../store/workspaces.ts";
import { destroyWorkspace } from "../workspace/destroy.ts";
import { isAbandoned, liveHolder } from "../workspace/holder.ts";
import { inReconcileScope, ownershipProblem, type Ownership } from "../workspace/owner.ts";
import { respond } from "../protocol/request.ts";
import { readLifecycleCall } from "../workspace/call.ts";

/**
 * `reconcile`: first check, then act. A listed id that is not this runtime's (another owner,
 * the other dialect, another runtime instance) fails the whole call before anything changes.
 * Listed workspaces are then stamped with this configuration (the daemon that lists them knows
 * them); see stampListed for the orphans that leaves. Then every workspace in this
 * configuration's scope (workspace/owner.ts inReconcileScope) that is not listed is destroyed (a
 * create still running is left alone), leftovers of interrupted creates and destroys are
 * cleaned up, and abandoned executions are reaped. Nothing outside the scope is ever touched. A
 * workspace whose destroy cannot finish (a mount point inside…) does not stop the rest: the call
 * fails at the end, naming it.
 */
export async function reconcile(_invocation: Invocation): Promise<number> {
  const { request, options, owner } = readLifecycleCall();
  const listed = request.workspaceIds;
  if (!listed) throw new Error("reconcile needs `workspaceIds` in the lifecycle request (the ids the daemon still knows; [] for none)");
  return withStore(options, async ({ db, home }) => {
    const problems = listed.flatMap((id) => {
      const record = getWorkspace(db, id);
      const problem = record && ownershipProblem(record, owner);
      return problem ? [`listed ${problem}`] : [];
    });
    if (problems.length > 0) throw new Error(`${problems.join("; ")}; nothing was changed`);
    writeTransaction(db, () => stampListed(db, listed, owner));
    const keep = new Set(listed);
    const scope = listWorkspaces(db, owner.owner).filter((record) => inReconcileScope(record, owner));
    const unfinished: string[] = [];
    for (const record of scope) {
      const busy = record.status === "creating" || record.status === "destroying";
      const interrupted = busy && (record.lock === null || isAbandoned(record));
      const unlisted = !keep.has(record.workspaceId) && !(record.status === "creating" && liveHolder(record));
      if (!unlisted && !interrupted) continue;
      try {
        await destroyWorkspace(db, home, record.workspaceId, owner, heldGitOf);
      } catch (error) {
        unfinished.push((error as Error).message);
      }
    }
    await reapAbandonedExecutions(db, scope.map((record) => record.workspaceId));
    // Refused exec ids of workspaces that do not exist: finished, nobody's, nothing to keep.
    writeTransaction(db, () => deleteOrphanRecords(db));
    if (unfinished.length > 0) throw new Error(`reconcile did everything else, but could not finish destroying ${unfinished.length} workspace(s): ${unfinished.join("; ")}`);
    respond({ type: "ok", protocolVersion: 1 }, owner.dialect);
    return 0;
  });
}

/**
 * Stamps every listed workspace with this configuration and the time it was listed. A listed
 * workspace of another configuration of this owner means that configuration was replaced (the
 * daemon lists what a runtime made before its options were edited): its workspaces the daemon
 * did not list are orphans from now on, outside every reconcile's scope, marked by `ls` and
 * removed by `orphans` when an operator asks. A workspace of unknown configuration (before
 * schema v2) proves nothing of the kind: every configuration of an older home has that one.
 */
function stampListed(db: Database, listed: readonly string[], owner: Ownership): void {
  const at = now();
  const replaced = new Set<string>();
  for (const id of listed) {
    const record = getWorkspace(db, id);
    if (!record) continue;
    if (record.configuration !== null && record.configuration !== owner.configuration) replaced.add(record.configuration);
    updateWorkspace(db, id, { configuration: owner.configuration, listedAt: at, orphanedAt: null });
  }
  if (replaced.size === 0) return;
  const keep = new Set(listed);
  for (const record of listWorkspaces(db, owner.owner)) {
    const left = !keep.has(record.workspaceId) && record.orphanedAt === null && record.configuration !== null && replaced.has(record.configuration);
    if (left && ownershipProblem(record, owner) === null) updateWorkspace(db, record.workspaceId, { orphanedAt: at });
  }
}
