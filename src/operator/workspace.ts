/**
 * `workspace pause|resume|inspect|reconcile`: the rest of the lifecycle for people. Each one
 * builds the lifecycle request the daemon would send, runs the runtime's own protocol
 * operation with it (through `--remote` for a remote runtime: remote/dispatch.ts takes it to the
 * workspace's host), and shows the answer readably (`--json`: the operation's response).
 */
import { UsageError, type Invocation } from "../argv.ts";
import { diagnose } from "../output.ts";
import { readOptions } from "../options.ts";
import type { LifecycleResponse } from "../protocol/index.ts";
import { routeWorkspace } from "../remote/placement.ts";
import { listWorkspaces } from "../store/workspaces.ts";
import { configurationOf, inReconcileScope, type Ownership } from "../workspace/owner.ts";
import { callOperation, dialectFields, openExistingStore, operationArgv0, operatorOptions, printJson, printLines, shellQuote, suggestion, withRecordedIsolation } from "./common.ts";
import { hostLine, stateLines } from "./new.ts";
import { hostWorkspaces, remoteRuntime, reportHosts, type RemoteRuntime } from "./remote-hosts.ts";
import { selection } from "./selection.ts";
import { onHost, workspaceFacts, type RecordFacts } from "./workspace-facts.ts";

/**
 * Runs a protocol operation of the runtime on one workspace, in the dialect it was created in
 * and with at least the isolation it keeps; null when it failed (its reason is already on stderr).
 */
function call(invocation: Invocation, op: string, expected: LifecycleResponse["type"], record: RecordFacts | null): LifecycleResponse | null {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const options = withRecordedIsolation(operatorOptions(invocation), record);
  const { dialect, fields } = dialectFields(record);
  const response = callOperation(invocation.command, [op, "--workspace-id", workspaceId], { ...fields, options }, dialect);
  if (response && response.type !== expected) throw new Error(`${op} answered ${response.type}, expected ${expected}`);
  return response;
}

/** `workspace pause -w W`: stops its executions (SIGTERM, stopTimeoutMs, SIGKILL) and marks it paused. */
export async function workspacePause(invocation: Invocation): Promise<number> {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const { record, liveExecIds, host } = await workspaceFacts(invocation, workspaceId);
  const live = liveExecIds.length;
  if (!call(invocation, "pause", "ok", record)) return 1;
  if (invocation.switches.has("json")) printJson({ workspaceId, paused: true, liveExecutionsBefore: live });
  else printLines([`workspace ${workspaceId} is paused${onHost(host)}${live ? ` (${live} live execution(s) were stopped)` : ""}; resume it with: ${suggestion(invocation, `workspace resume -w ${shellQuote(workspaceId)}`)}`]);
  return 0;
}

/** `workspace resume -w W`: paused → ready (the root checked again). */
export async function workspaceResume(invocation: Invocation): Promise<number> {
  const { record, host } = await workspaceFacts(invocation, invocation.flags.get("workspace-id")!);
  const response = call(invocation, "resume", "state", record);
  if (!response || response.type !== "state") return 1;
  if (invocation.switches.has("json")) printJson(response);
  else printLines(stateLines(response.state, response.placement, hostLine(host)));
  return 0;
}

/** `workspace inspect -w W`: exit 0 for ready or paused, 1 for missing or error (the answer is still shown). */
export async function workspaceInspect(invocation: Invocation): Promise<number> {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const { record, host } = await workspaceFacts(invocation, workspaceId);
  const response = call(invocation, "inspect", "inspection", record);
  if (!response || response.type !== "inspection") return 1;
  const { inspection } = response;
  const usable = inspection.status === "ready" || inspection.status === "paused";
  if (invocation.switches.has("json")) {
    printJson(response);
    return usable ? 0 : 1;
  }
  if (inspection.status === "ready" || inspection.status === "paused") printLines(stateLines(inspection.state, inspection.placement, hostLine(host)));
  else if (inspection.status === "missing") printLines([`workspace ${workspaceId} is missing${onHost(host)} (no such workspace in this home, or its create has not finished)`]);
  else printLines([`workspace ${workspaceId} is in error${onHost(host)}: ${inspection.message}`]);
  return usable ? 0 : 1;
}

/**
 * `workspace reconcile (--keep W... | --keep-all) [--runtime-instance-id ID]`: the daemon's
 * reconcile, by hand, for the scope of these options (workspace/owner.ts inReconcileScope: the
 * owner, the dialect and instance, and the configuration whatever the owner). Every
 * workspace in that scope that is not kept is destroyed; interrupted creates and destroys are
 * cleaned up; executions nobody owns any more are reaped. `--keep-all` keeps the whole scope,
 * and only it: listing a workspace stamps it with this configuration.
 */
export async function workspaceReconcile(invocation: Invocation): Promise<number> {
  const keep = invocation.lists.get("keep") ?? [];
  const keepAll = invocation.switches.has("keep-all");
  if (keepAll && keep.length) throw new UsageError("give either --keep W... or --keep-all, not both", invocation.command);
  if (!keepAll && keep.length === 0) {
    throw new UsageError("say which workspaces to keep: --keep W (repeatable), or --keep-all; every other workspace of the owner is destroyed", invocation.command);
  }
  const options = operatorOptions(invocation);
  const instanceId = invocation.flags.get("runtime-instance-id") ?? null;
  const chosen = selection(invocation);
  const runtime = chosen.remote === null ? null : await remoteRuntime(chosen);
  const who: Ownership = {
    owner: runtime?.owner ?? readOptions(options).owner,
    dialect: instanceId === null ? "seed" : "later",
    instanceId,
    configuration: configurationOf(options, operationArgv0()),
  };
  const remote = runtime === null ? null : await remoteScope(runtime, who);
  // A reconcile computed without a host's answer could destroy what that host holds.
  if (remote?.complete === false) throw new Error("workspace reconcile: not every host of the runtime answered (above); nothing was changed");
  const before = remote?.scope ?? inScope(options, who);
  const kept = keepAll ? before : keep;
  if (runtime !== null) checkRouting(runtime, remote!.hosts, kept);
  const fields = instanceId === null ? {} : { runtimeInstanceId: instanceId };
  if (!callOperation(invocation.command, ["reconcile"], { ...fields, options, workspaceIds: kept }, who.dialect)) return 1;
  const later = runtime === null ? null : await remoteScope(runtime, who);
  if (later?.complete === false) diagnose("workspace reconcile: done; what it destroyed on the hosts that did not answer since is not listed");
  const after = new Set(later?.scope ?? inScope(options, who));
  // A host that did not answer afterwards: nothing of it is counted as destroyed.
  const destroyed = before.filter((id) => !after.has(id) && (later === null || later.answered.has(remote!.hosts.get(id)!)));
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

/**
 * inScope on every host of a remote runtime, and the host each workspace of its owner lives on.
 * Each host fingerprints the configuration of the options it gets and its own program
 * (remote/context.ts). `complete`: every host answered (those that did not are said on stderr).
 */
async function remoteScope(runtime: RemoteRuntime, who: Ownership): Promise<{ scope: string[]; hosts: Map<string, string>; answered: Set<string>; complete: boolean }> {
  const answers = await hostWorkspaces(runtime);
  const complete = reportHosts("workspace reconcile", answers);
  const scope: string[] = [];
  const hosts = new Map<string, string>();
  for (const { host, value } of answers) {
    const theirs = { ...who, configuration: configurationOf(runtime.ctx.remoteSideOptions, host.binary) };
    for (const w of value?.workspaces ?? []) {
      hosts.set(w.workspaceId, host.key);
      const stamp = { ...w, instanceId: w.runtimeInstanceId, orphanedAt: w.orphanedAt === null ? null : Date.parse(w.orphanedAt) };
      if (inReconcileScope(stamp, theirs)) scope.push(w.workspaceId);
    }
  }
  const answered = new Set(answers.filter((answer) => answer.problem === null).map((answer) => answer.host.key));
  return { scope, hosts, answered, complete };
}

/**
 * Every kept workspace that lives on a host must be routed there (remote/placement.ts): the
 * reconcile tells each host the kept ids routed to it, and a host destroys what it is not told.
 * A placement record missing here (another local home) would destroy it: refused.
 */
function checkRouting(runtime: RemoteRuntime, found: Map<string, string>, kept: readonly string[]): void {
  for (const id of kept) {
    const on = found.get(id);
    const routed = routeWorkspace(runtime.ctx, id).key;
    if (on !== undefined && on !== routed) {
      throw new Error(
        `workspace reconcile: workspace ${JSON.stringify(id)} lives on ${on}, but the placements of home ${runtime.ctx.home} route it to ${routed}: the reconcile would destroy it on ${on}; nothing was changed (use the daemon's own home: --config FILE --runtime NAME without --home)`,
      );
    }
  }
}
