import type { Invocation } from "../argv.ts";
import { withExistingStore } from "../store/db.ts";
import { getWorkspace } from "../store/workspaces.ts";
import { rootProblem } from "../workspace/confinement.ts";
import { assertOwner } from "../workspace/owner.ts";
import { inspectionOf } from "../workspace/state.ts";
import { respond } from "../protocol/request.ts";
import { readLifecycleCall } from "../workspace/call.ts";

/**
 * `inspect`: authoritative and cheap (it runs before every exec): one store open, one lookup,
 * one stat, no git. A create still running or abandoned, or a destroy under way, is `missing`;
 * a root removed behind our back is `error`.
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
    if (!record || record.status === "creating" || record.status === "destroying") return missing();
    respond({ type: "inspection", protocolVersion: 1, inspection: inspectionOf(record, options, rootProblem(record), owner.dialect) }, owner.dialect);
    return 0;
  }, missing);
}
