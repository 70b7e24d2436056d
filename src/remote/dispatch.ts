/**
 * The protocol operations of a `--remote` runtime: each one is carried to the workspace's host
 * as `ssh … <remote binary> <op> <args>` with the request (its options rewritten for the remote
 * side) on stdin. The remote's stdout, stderr and exit status come back unchanged; ssh's own
 * failures (exit 255) become exit 1 with a line saying so. Each operation but describe (no
 * options, so no home) ends with its line in the local runtime log, after its answer.
 */
import type { Database } from "bun:sqlite";
import type { Invocation } from "../argv.ts";
import { addOutcomeFacts, attachLifecycleLog, loggedOperation } from "../log/call-log.ts";
import { setLogRemote } from "../log/runtime-log.ts";
import { DescribeResponse, LifecycleRequest, LifecycleResponse, decodeOwnOutput, dialectOf, encodeFrame, parseMessage, type CreateInput } from "../protocol/index.ts";
import { diagnose, writeAll, writeStdout } from "../output.ts";
import { readLifecycleRequest } from "../protocol/request.ts";
import { withExistingStore, withStore } from "../store/db.ts";
import { claimPlacements, forgetPlacement, placeOnce, placementRecordsOf, type Placement } from "../store/placements.ts";
import { createInputOf } from "../workspace/input.ts";
import { bareSettings, hostLogins, hostUrl, logNoReuse, remoteContext, type RemoteCall, type RemoteContext } from "./context.ts";
import { knownHosts, placeWorkspace, routeWorkspace } from "./placement.ts";
import { shipSources } from "./source.ts";
import { SSH_FAILED, firstLine, requireDistinctLogins, runRemote, type SshSettings } from "./ssh.ts";
import type { RemoteHost } from "../ssh-url.ts";
import { execThroughRemote } from "./wrapper.ts";

/** The operations a `--remote` runtime carries to its hosts. */
export const REMOTE_OPERATIONS = ["describe", "create", "inspect", "pause", "resume", "destroy", "reconcile", "signal", "exec"] as const;

/** Runs one protocol operation on the right host. */
export async function forward(call: RemoteCall, invocation: Invocation): Promise<number> {
  switch (invocation.command) {
    case "describe":
      return await describeRemote(call);
    case "exec":
      return await execThroughRemote(call, invocation);
    default:
      return await loggedOperation(invocation.command, (logged) => lifecycleOperation(call, logged))(invocation);
  }
}

/** A lifecycle operation on its host(s). */
async function lifecycleOperation(call: RemoteCall, invocation: Invocation): Promise<number> {
  switch (invocation.command) {
    case "create":
      return await createRemote(call, invocation);
    case "destroy":
      return await destroyRemote(call, invocation);
    case "reconcile":
      return await reconcileRemote(call);
    default:
      return await workspaceOperation(call, invocation);
  }
}

/** The operation's own argv, as the daemon gave it (the contract's per-op arguments). */
function operationWords(host: RemoteHost, invocation: Invocation): string[] {
  const words = [host.binary, invocation.command];
  for (const [name, value] of invocation.flags) words.push(`--${name}`, value);
  return words;
}

/**
 * What the remote side gets on stdin: the daemon's request in its own dialect (instance id and
 * all), with the remote side's options, and for create the shipped input.
 */
function remoteRequest(ctx: RemoteContext, request: LifecycleRequest, changes: { input?: CreateInput; workspaceIds?: string[] } = {}): Uint8Array {
  const value = { ...request, ...changes, options: ctx.remoteSideOptions } as LifecycleRequest;
  return Buffer.from(encodeFrame(LifecycleRequest, value, "remote lifecycle request"));
}

/**
 * The remote status as ours: unchanged, except ssh's own failure (255), which is exit 1 with
 * a diagnostic, and an explanation next to a remote shell's "not found" (127).
 */
function localStatus(host: RemoteHost, status: number, stderrHead: string): number {
  if (status === SSH_FAILED) {
    addOutcomeFacts({ sshStatus: SSH_FAILED, message: firstLine(stderrHead) ?? "ssh failed without a message" });
    diagnose(`ssh to ${host.key} failed (exit 255): the host was not reached, refused us, or the remote side was killed (ssh's message, if any, is above)`);
    return 1;
  }
  if (status === 127) diagnose(`${host.key}: the remote shell could not run ${JSON.stringify(host.binary)} (exit 127); install paseo-host-runtime there or name its path in the URL (ssh://host/path/to/paseo-host-runtime)`);
  return status;
}

/** Runs the operation on `host` and passes its stdout through. */
async function relay(ctx: RemoteContext, host: RemoteHost, invocation: Invocation, stdin: Uint8Array): Promise<number> {
  const result = await runRemote(host, ctx.settings, operationWords(host, invocation), stdin);
  // Bytes as they came; nothing at all when ssh failed midway (the daemon parses the whole of stdout).
  if (result.status !== SSH_FAILED) writeAll(1, result.stdout);
  return localStatus(host, result.status, result.stderrHead);
}

/**
 * Reads the request and builds the context (options validated before anything is contacted);
 * the local runtime log then knows its home and the host(s) the operation goes to.
 */
function readCall(call: RemoteCall): { request: LifecycleRequest; ctx: RemoteContext } {
  const request = readLifecycleRequest();
  const ctx = remoteContext(call, request.options);
  // Unknown keys are the remote side's to warn about (the request travels there).
  attachLifecycleLog(ctx.options, []);
  logNoReuse(ctx);
  return { request, ctx };
}

/** The host(s) the operation goes to, on its log lines from now on. */
function logHosts(ctx: RemoteContext, hosts: readonly RemoteHost[]): void {
  const urls = hosts.map((host) => hostUrl(ctx, host));
  setLogRemote(urls.length === 1 ? urls[0]! : urls, hosts.flatMap(hostLogins));
}

/** inspect, pause, resume, signal: to the workspace's host, as they are. */
async function workspaceOperation(call: RemoteCall, invocation: Invocation): Promise<number> {
  const { request, ctx } = readCall(call);
  const host = routeWorkspace(ctx, invocation.flags.get("workspace-id")!);
  logHosts(ctx, [host]);
  return await relay(ctx, host, invocation, remoteRequest(ctx, request));
}

/**
 * create: place (recorded first), ship host-directory sources, then the remote create. Its ok
 * records the host again: a reconcile meanwhile may have heard `missing` (a create not yet
 * done) from it and forgotten the record.
 */
async function createRemote(call: RemoteCall, invocation: Invocation): Promise<number> {
  const { request, ctx } = readCall(call);
  const input = createInputOf(request, invocation.flags.get("workspace-id")!, ctx.options.allowedGitProtocols);
  const host = await placeWorkspace(ctx, input.workspaceId);
  logHosts(ctx, [host]);
  const shipped = await shipSources(ctx, host, input);
  const status = await relay(ctx, host, invocation, remoteRequest(ctx, request, { input: shipped }));
  if (status === 0) await withStore(ctx.options, ({ db }) => placeOnce(db, ctx.options.owner, input.workspaceId, host.key, ctx.configuration));
  return status;
}

/** destroy: on the recorded host; the record goes once the host says ok. */
async function destroyRemote(call: RemoteCall, invocation: Invocation): Promise<number> {
  const { request, ctx } = readCall(call);
  const workspaceId = invocation.flags.get("workspace-id")!;
  const host = routeWorkspace(ctx, workspaceId);
  logHosts(ctx, [host]);
  const status = await relay(ctx, host, invocation, remoteRequest(ctx, request));
  if (status === 0) await withExistingStore(ctx.options, ({ db }) => forgetPlacement(db, ctx.options.owner, workspaceId), () => undefined);
  return status;
}

/**
 * reconcile: every configured host, and every host a workspace is recorded on, gets the listed
 * ids recorded there, and every listed id without a record. All must succeed.
 * A host destroys only the unlisted workspaces of its own scope (orphans and other
 * configurations' stay), so a record goes only for those its host then says are missing.
 */
async function reconcileRemote(call: RemoteCall): Promise<number> {
  const { request, ctx } = readCall(call);
  const dialect = dialectOf(request);
  const listed = request.workspaceIds;
  if (!listed) throw new Error("reconcile needs `workspaceIds` in the lifecycle request (the ids the daemon still knows; [] for none)");
  const recorded = await withExistingStore(ctx.options, ({ db }) => readPlacements(db, ctx, listed), () => new Map<string, Placement>());
  // Another configuration's records (one local home, one owner) are not ours to follow or forget.
  const ours = [...recorded].filter(([, placed]) => placed.configuration === ctx.configuration);
  // A record from before schema 5 (no configuration) still names a host to reach, never one to forget.
  const reach = [...recorded.values()].filter((placed) => placed.configuration === null || placed.configuration === ctx.configuration);
  const hosts = new Map(knownHosts(ctx, reach.map((placed) => placed.host)).map((host) => [host.key, host]));
  requireDistinctLogins([...hosts.values()], ctx.settings);
  logHosts(ctx, [...hosts.values()]);
  const idsOf = new Map<string, string[]>([...hosts.keys()].map((key) => [key, []]));
  // A listed id without a record may be placed right now, by a create this read did not see, on
  // any host: each is told to keep it (keeping what is not there costs nothing; a guess could destroy it).
  for (const id of listed) {
    const placed = recorded.get(id)?.host;
    for (const key of placed === undefined ? hosts.keys() : [placed]) idsOf.get(key)!.push(id);
  }
  const unlistedOn = (host: RemoteHost) => ours.filter(([id, placed]) => placed.host === host.key && !listed.includes(id)).map(([id]) => id);
  const words = (host: RemoteHost) => [host.binary, "reconcile"];
  const results = await Promise.all(
    [...hosts.values()].map(async (host) => {
      const stdin = remoteRequest(ctx, request, { workspaceIds: idsOf.get(host.key)! });
      const result = await runRemote(host, ctx.settings, words(host), stdin);
      if (result.status === 0) parseMessage(LifecycleResponse[dialect], decodeOwnOutput(result.stdout, `reconcile response of ${host.key}`), `reconcile response of ${host.key}`);
      const status = localStatus(host, result.status, result.stderrHead);
      return { host, status, gone: status === 0 ? await missingOn(ctx, request, host, unlistedOn(host)) : [] };
    }),
  );
  const gone = results.flatMap((result) => result.gone);
  if (gone.length > 0) await withExistingStore(ctx.options, ({ db }) => gone.forEach((id) => forgetPlacement(db, ctx.options.owner, id)), () => undefined);
  const failed = results.filter((result) => result.status !== 0);
  if (failed.length > 0) {
    diagnose(`reconcile failed on ${failed.map((result) => result.host.key).join(", ")}; the other hosts were reconciled`);
    return failed[0]!.status;
  }
  writeStdout(encodeFrame(LifecycleResponse[dialect], { type: "ok", protocolVersion: 1 }, "lifecycle response"));
  return 0;
}

/** The owner's placements, after the listed ones became this configuration's (the daemon listing them knows them). */
function readPlacements(db: Database, ctx: RemoteContext, listed: readonly string[]): Map<string, Placement> {
  claimPlacements(db, ctx.options.owner, listed, ctx.configuration);
  return placementRecordsOf(db, ctx.options.owner);
}

/**
 * Which of `ids` `host` says are missing, by its own inspect (in the reconcile's dialect and
 * options). Any other answer (ready, paused, error, a refusal such as another owner's) keeps
 * the record, and so does no answer (said on stderr).
 */
async function missingOn(ctx: RemoteContext, request: LifecycleRequest, host: RemoteHost, ids: readonly string[]): Promise<string[]> {
  const { workspaceIds: _, ...inspect } = request;
  const stdin = remoteRequest(ctx, inspect as LifecycleRequest);
  const missing: string[] = [];
  for (const id of ids) {
    try {
      const result = await runRemote(host, ctx.settings, [host.binary, "inspect", "--workspace-id", id], stdin, { stderr: "keep" });
      if (result.status === SSH_FAILED) throw new Error("its inspect did not reach the host (ssh exit 255)");
      if (result.status !== 0) continue;
      const label = `inspect response of ${host.key}`;
      const answer = parseMessage(LifecycleResponse[dialectOf(request)], decodeOwnOutput(result.stdout, label), label);
      if (answer.type === "inspection" && answer.inspection.status === "missing") missing.push(id);
    } catch (error) {
      diagnose(`reconcile: the placement of ${JSON.stringify(id)} on ${host.key} is kept: ${(error as Error).message}`);
    }
  }
  return missing;
}

/** Answers of `describe`, asked at most once per host in this process. */
const described = new Map<string, Promise<DescribeResponse>>();

/** The remote binary's own describe (the remote host decides what it supports). */
function describeHost(host: RemoteHost, settings: SshSettings): Promise<DescribeResponse> {
  let answer = described.get(host.key);
  if (!answer) {
    answer = runRemote(host, settings, [host.binary, "describe"], null).then((result) => {
      if (localStatus(host, result.status, result.stderrHead) !== 0) throw new Error(`describe failed on ${host.key} (exit ${result.status})`);
      return parseMessage(DescribeResponse, decodeOwnOutput(result.stdout, `describe response of ${host.key}`), `describe response of ${host.key}`);
    });
    described.set(host.key, answer);
  }
  return answer;
}

/** describe: the `--remote` host's answer, canonical (the daemon gives no options to describe). */
async function describeRemote(call: RemoteCall): Promise<number> {
  const answer = await describeHost(call.primary, bareSettings(call));
  writeStdout(encodeFrame(DescribeResponse, answer, "describe response"));
  return 0;
}
