/**
 * `workspace pause|resume|inspect|reconcile`: the rest of the lifecycle for people. Each one
 * builds the lifecycle request the daemon would send, runs this binary's own protocol
 * operation with it, and shows the answer readably (`--json`: the operation's response).
 */
import { UsageError, type Invocation } from "../argv.ts";
import { readOptions } from "../options.ts";
import type { LifecycleResponse } from "../protocol/index.ts";
import { listWorkspaces } from "../store/workspaces.ts";
import { configurationOf, inReconcileScope, type Ownership } from "../workspace/owner.ts";
import { callOperation, dialectFields, openExistingStore, operationArgv0, operatorOptions, printJson, printLines, recordedWorkspace, withRecordedIsolation } from "./common.ts";
import { stateLines } from "./new.ts";
import { liveExecutions } from "./ps.ts";

/**
 * Runs a protocol operation of this binary on one workspace, in the dialect it was created in
 * and with at least the isolation it keeps; null when it failed (its reason is already on stderr).
 */
function call(invocation: Invocation, op: string, expected: LifecycleResponse["type"]): LifecycleResponse | null {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const given = operatorOptions(invocation);
  const record = recordedWorkspace(given, workspaceId);
  const options = withRecordedIsolation(given, record);
  const { dialect, fields } = dialectFields(record);
  const response = callOperation(invocation.command, [op, "--workspace-id", workspaceId], { ...fields, options }, dialect);
  if (response && response.type !== expected) throw new Error(`${op} answered ${response.type}, expected ${expected}`);
  return response;
}

/** The live executions of one workspace (empty when there is no store yet). */
function liveIn(options: Record<string, unknown>, workspaceId?: string): { workspaceId: string; execId: string }[] {
  const { store } = openExistingStore(options);
  if (!store) return [];
  try {
    return liveExecutions(store.db, workspaceId);
  } finally {
    store.db.close();
  }
}

/** `workspace pause -w W`: stops its executions (SIGTERM, stopTimeoutMs, SIGKILL) and marks it paused. */
export function workspacePause(invocation: Invocation): number {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const live = liveIn(operatorOptions(invocation), workspaceId).length;
  if (!call(invocation, "pause", "ok")) return 1;
  if (invocation.switches.has("json")) printJson({ workspaceId, paused: true, liveExecutionsBefore: live });
  else printLines([`workspace ${workspaceId} is paused${live ? ` (${live} live execution(s) were stopped)` : ""}; resume it with: paseo-host-runtime workspace resume -w ${workspaceId}`]);
  return 0;
}

/** `workspace resume -w W`: paused → ready (the root checked again). */
export function workspaceResume(invocation: Invocation): number {
  const response = call(invocation, "resume", "state");
  if (!response || response.type !== "state") return 1;
  if (invocation.switches.has("json")) printJson(response);
  else printLines(stateLines(response.state, response.placement));
  return 0;
}

/** `workspace inspect -w W`: exit 0 for ready or paused, 1 for missing or error (the answer is still shown). */
export function workspaceInspect(invocation: Invocation): number {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const response = call(invocation, "inspect", "inspection");
  if (!response || response.type !== "inspection") return 1;
  const { inspection } = response;
  const usable = inspection.status === "ready" || inspection.status === "paused";
  if (invocation.switches.has("json")) {
    printJson(response);
    return usable ? 0 : 1;
  }
  if (inspection.status === "ready" || inspection.status === "paused") printLines(stateLines(inspection.state, inspection.placement));
  else if (inspection.status === "missing") printLines([`workspace ${workspaceId} is missing (no such workspace in this home, or its create has not finished)`]);
  else printLines([`workspace ${workspaceId} is in error: ${inspection.message}`]);
  return usable ? 0 : 1;
}

/**
 * `workspace reconcile (--keep W... | --keep-all) [--runtime-instance-id ID]`: the daemon's
 * reconcile, by hand, for the scope of these options (workspace/owner.ts inReconcileScope: the
 * owner, the dialect and instance, and under the default owner the configuration). Every
 * workspace in that scope that is not kept is destroyed; interrupted creates and destroys are
 * cleaned up; executions nobody owns any more are reaped. `--keep-all` keeps the whole scope,
 * and only it: listing a workspace stamps it with this configuration.
 */
export function workspaceReconcile(invocation: Invocation): number {
  const keep = invocation.lists.get("keep") ?? [];
  const keepAll = invocation.switches.has("keep-all");
  if (keepAll && keep.length) throw new UsageError("give either --keep W... or --keep-all, not both", invocation.command);
  if (!keepAll && keep.length === 0) {
    throw new UsageError("say which workspaces to keep: --keep W (repeatable), or --keep-all; every other workspace of the owner is destroyed", invocation.command);
  }
  const options = operatorOptions(invocation);
  const instanceId = invocation.flags.get("runtime-instance-id") ?? null;
  const who: Ownership = {
    owner: readOptions(options).owner,
    dialect: instanceId === null ? "seed" : "later",
    instanceId,
    configuration: configurationOf(options, operationArgv0()),
  };
  const before = inScope(options, who);
  const kept = keepAll ? before : keep;
  const fields = instanceId === null ? {} : { runtimeInstanceId: instanceId };
  if (!callOperation(invocation.command, ["reconcile"], { ...fields, options, workspaceIds: kept }, who.dialect)) return 1;
  const after = new Set(inScope(options, who));
  const destroyed = before.filter((id) => !after.has(id));
  if (invocation.switches.has("json")) {
    printJson({ owner: who.owner, kept, destroyed });
    return 0;
  }
  printLines([destroyed.length ? `destroyed ${destroyed.length} workspace(s) of owner ${JSON.stringify(who.owner)}: ${destroyed.join(", ")}` : `nothing destroyed (owner ${JSON.stringify(who.owner)})`]);
  return 0;
}

/** The workspaces a reconcile on behalf of `who` may remove (and that --keep-all keeps). */
function inScope(options: Record<string, unknown>, who: Ownership): string[] {
  const { store } = openExistingStore(options);
  if (!store) return [];
  try {
    return listWorkspaces(store.db, who.owner)
      .filter((record) => inReconcileScope(record, who))
      .map((record) => record.workspaceId);
  } finally {
    store.db.close();
  }
}
