/**
 * `workspace pause|resume|inspect|reconcile`: the rest of the lifecycle for people. Each one
 * builds the lifecycle request the daemon would send, runs this binary's own protocol
 * operation with it, and shows the answer readably (`--json`: the operation's response).
 */
import { UsageError, type Invocation } from "../../cli.ts";
import { readOptions } from "../../options.ts";
import { diagnose } from "../../output.ts";
import { LifecycleResponse, parseMessage } from "../../protocol/index.ts";
import { listWorkspaces } from "../../store/workspaces.ts";
import { openExistingStore, operatorOptions, printJson, runOperation } from "./common.ts";
import { stateLines } from "./new.ts";
import { liveExecutions } from "./ps.ts";

/** Runs a protocol operation of this binary; null when it failed (its reason is already on stderr). */
function call(command: string, args: string[], request: Record<string, unknown>, expected: LifecycleResponse["type"]): LifecycleResponse | null {
  const result = runOperation(args, { protocolVersion: 1, ...request });
  if (result.status !== 0) {
    diagnose(`${command}: ${args[0]} failed (exit ${result.status}); see the reason above`);
    return null;
  }
  const response = parseMessage(LifecycleResponse, result.stdout, `${args[0]} response`);
  if (response.type !== expected) throw new Error(`${args[0]} answered ${response.type}, expected ${expected}`);
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
  const options = operatorOptions(invocation);
  const live = liveIn(options, workspaceId).length;
  if (!call(invocation.command, ["pause", "--workspace-id", workspaceId], { options }, "ok")) return 1;
  if (invocation.switches.has("json")) printJson({ workspaceId, paused: true, liveExecutionsBefore: live });
  else console.log(`workspace ${workspaceId} is paused${live ? ` (${live} live execution(s) were stopped)` : ""}; resume it with: paseo-host-runtime workspace resume -w ${workspaceId}`);
  return 0;
}

/** `workspace resume -w W`: paused → ready (the root checked again). */
export function workspaceResume(invocation: Invocation): number {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const response = call(invocation.command, ["resume", "--workspace-id", workspaceId], { options: operatorOptions(invocation) }, "state");
  if (!response || response.type !== "state") return 1;
  if (invocation.switches.has("json")) printJson(response);
  else console.log(stateLines(response.state, response.placement).join("\n"));
  return 0;
}

/** `workspace inspect -w W`: exit 0 for ready or paused, 1 for missing or error (the answer is still shown). */
export function workspaceInspect(invocation: Invocation): number {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const response = call(invocation.command, ["inspect", "--workspace-id", workspaceId], { options: operatorOptions(invocation) }, "inspection");
  if (!response || response.type !== "inspection") return 1;
  const { inspection } = response;
  const usable = inspection.status === "ready" || inspection.status === "paused";
  if (invocation.switches.has("json")) {
    printJson(response);
    return usable ? 0 : 1;
  }
  if (inspection.status === "ready" || inspection.status === "paused") console.log(stateLines(inspection.state, inspection.placement).join("\n"));
  else if (inspection.status === "missing") console.log(`workspace ${workspaceId} is missing (no such workspace in this home, or it is being created or destroyed)`);
  else console.log(`workspace ${workspaceId} is in error: ${inspection.message}`);
  return usable ? 0 : 1;
}

/**
 * `workspace reconcile (--keep W... | --keep-all)`: the daemon's start-up reconcile, by hand.
 * Every workspace of this owner that is not kept is destroyed; interrupted creates and destroys
 * are cleaned up; executions nobody owns any more are reaped. Other owners' are never touched.
 */
export function workspaceReconcile(invocation: Invocation): number {
  const keep = invocation.lists.get("keep") ?? [];
  const keepAll = invocation.switches.has("keep-all");
  if (keepAll && keep.length) throw new UsageError("give either --keep W... or --keep-all, not both", invocation.command);
  if (!keepAll && keep.length === 0) {
    throw new UsageError("say which workspaces to keep: --keep W (repeatable), or --keep-all; every other workspace of the owner is destroyed", invocation.command);
  }
  const options = operatorOptions(invocation);
  const owner = readOptions(options).owner;
  const before = ownedWorkspaces(options, owner);
  const kept = keepAll ? before : keep;
  if (!call(invocation.command, ["reconcile"], { options, workspaceIds: kept }, "ok")) return 1;
  const after = new Set(ownedWorkspaces(options, owner));
  const destroyed = before.filter((id) => !after.has(id));
  if (invocation.switches.has("json")) {
    printJson({ owner, kept, destroyed });
    return 0;
  }
  console.log(destroyed.length ? `destroyed ${destroyed.length} workspace(s) of owner ${JSON.stringify(owner)}: ${destroyed.join(", ")}` : `nothing destroyed (owner ${JSON.stringify(owner)})`);
  return 0;
}

function ownedWorkspaces(options: Record<string, unknown>, owner: string): string[] {
  const { store } = openExistingStore(options);
  if (!store) return [];
  try {
    return listWorkspaces(store.db, owner).map((record) => record.workspaceId);
  } finally {
    store.db.close();
  }
}
