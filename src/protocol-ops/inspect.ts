import type { Invocation } from "../argv.ts";
import { withExistingStore } from "../store/db.ts";
import { getWorkspace } from "../store/workspaces.ts";
import { rootProblem } from "../workspace/confinement.ts";
import { BeingDestroyed, refusalOf, WorkspaceMissing } from "../workspace/refusals.ts";
import { inspectionOf } from "../workspace/state.ts";
import { respond } from "../protocol/request.ts";
import { readLifecycleCall } from "../workspace/call.ts";
import { mark } from "../trace.ts";

/**
 * `inspect`: authoritative and cheap (it runs before every exec): one store open, one lookup,
 * one stat, no git. A create still running or abandoned is `missing`; a destroy under way or
 * stopped before it removed everything is `error`, saying why and what to do, until a destroy
 * finishes; a root removed behind our back is `error`.
 */
export function inspect(invocation: Invocation): Promise<number> {
  const { options, owner } = readLifecycleCall();
  mark("request");
  const workspaceId = invocation.flags.get("workspace-id")!;
  const missing = () => {
    respond({ type: "inspection", protocolVersion: 1, inspection: { status: "missing" } }, owner.dialect);
    return 0;
  };
  return withExistingStore(options, ({ db }) => {
    mark("store open");
    const record = getWorkspace(db, workspaceId);
    const refusal = refusalOf(record, workspaceId, owner);
    if (refusal instanceof WorkspaceMissing) return missing();
    if (refusal !== null && !(refusal instanceof BeingDestroyed)) throw refusal;
    const inspection = refusal ? { status: "error" as const, message: refusal.message } : inspectionOf(record!, options, rootProblem(record!), owner.dialect);
    mark("inspected");
    respond({ type: "inspection", protocolVersion: 1, inspection }, owner.dialect);
    mark("responded");
    return 0;
  }, missing);
}
