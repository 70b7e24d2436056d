import type { Invocation } from "../argv.ts";
import { withExistingStore } from "../store/db.ts";
import { countsAsMissing, getWorkspace } from "../store/workspaces.ts";
import { rootProblem } from "../workspace/confinement.ts";
import { unfinishedDestroy } from "../workspace/lock.ts";
import { assertOwner } from "../workspace/owner.ts";
import { inspectionOf } from "../workspace/state.ts";
import { respond } from "../protocol/request.ts";
import { readLifecycleCall } from "../workspace/call.ts";

/**
 * `inspect`: authoritative and cheap (it runs before every exec): one store open, one lookup,
 * one stat, no git. A create still running or abandoned is `missing`; a destroy under way or
 * stopped before it removed everything is `error`, saying why and what to do, until a destroy
 * finishes; a root removed behind our back is `error`.
 */
export function inspect(invocation: Invocation): Promise<number> {
  const { options, owner } = readLifecycleCall();
  const workspaceId = invocation.flags.get("workspace-id")!;
  const missing = () => {
    respond({ type: "inspection", protocolVersion: 1, inspection: { status: "missing" } }, owner.dialect);
    return 0;
  };
  return withExistingStore(options, ({ db }) => {
    const record = getWorkspace(db, workspaceId);
    if (record) assertOwner(record, owner);
    if (!record || countsAsMissing(record.status)) return missing();
    const unfinished = unfinishedDestroy(record);
    const inspection = unfinished ? { status: "error" as const, message: unfinished } : inspectionOf(record, options, rootProblem(record), owner.dialect);
    respond({ type: "inspection", protocolVersion: 1, inspection }, owner.dialect);
    return 0;
  }, missing);
}
