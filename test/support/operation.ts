/**
 * The test kit's one runner of a lifecycle operation, the way the daemon runs it (one request
 * line on stdin, one response on stdout), locally or through `--remote`, and the judging of
 * its answer.
 */
import { LifecycleResponse, encodeFrame, parseMessage, type Dialect } from "../../src/protocol/index.ts";
import { request, runBinary, type RunResult } from "../../kit/binary.ts";
import { INSTANCE_ID } from "../../kit/envelope.ts";
import type { SshLab } from "../../kit/sshd.ts";
import type { ReadyWorkspace } from "../../kit/workspace.ts";

/** A lifecycle result with the parsed stdout (null when stdout was empty). */
export interface OpResult extends RunResult {
  json: any;
}

/**
 * Runs `[...prefix] name [--workspace-id W]` with one request line on stdin (protocolVersion
 * first, then `body`), as the daemon does; `prefix` carries `--remote …` for remote runs.
 */
export async function op(name: string, workspaceId: string | null, body: Record<string, unknown>, env: Record<string, string> = {}, prefix: readonly string[] = []): Promise<OpResult> {
  const args = workspaceId === null ? [name] : [name, "--workspace-id", workspaceId];
  const result = await runBinary([...prefix, ...args], { stdin: `${JSON.stringify({ protocolVersion: 1, ...body })}\n`, env });
  return { ...result, json: result.stdout === "" ? null : JSON.parse(result.stdout) };
}

/** One lifecycle operation through `--remote` (the lab's URL and ssh configuration). */
export async function remoteOp(lab: SshLab, name: string, workspaceId: string | null, body: Record<string, unknown>, prefix = lab.prefix): Promise<OpResult> {
  return await op(name, workspaceId, body, {}, prefix);
}

/** A create input for `source` and `placement`. */
export function createInput(workspaceId: string, source: Record<string, unknown>, placement: Record<string, unknown> = { kind: "existing" }, extra: Record<string, unknown> = {}) {
  return { workspaceId, project: { projectId: "project-1", source }, placement, ...extra };
}

/** `create` with `input` under `options`; the request body is exactly what the daemon sends. */
export async function create(options: Record<string, unknown>, input: { workspaceId: string }): Promise<OpResult> {
  return await op("create", input.workspaceId, { input, options });
}

/**
 * A lifecycle body as the later daemon sends it (runtimeInstanceId second once `op` adds the
 * version). Pass the result to `op`.
 */
export function later(body: Record<string, unknown>, instanceId = INSTANCE_ID): Record<string, unknown> {
  return { runtimeInstanceId: instanceId, ...body };
}

/**
 * A teardown's destroy: throws, with its stderr, unless it answered ok, so a workspace a test
 * leaves behind fails the file instead of being swallowed. A workspace already gone answers ok;
 * a test that leaves a destroy unfinished on purpose finishes it itself before this runs.
 */
export async function destroyed(workspaceId: string, options: Record<string, unknown>, prefix: readonly string[] = []): Promise<void> {
  const result = await op("destroy", workspaceId, { options }, {}, prefix);
  if (result.code !== 0 || result.json?.type !== "ok") throw new Error(`teardown: destroy of workspace "${workspaceId}" did not succeed (exit ${result.code}): ${result.stderr}${result.stdout}`);
}

/** Asserts an operation succeeded and returns its JSON. */
export function ok(result: OpResult): any {
  if (result.code !== 0) throw new Error(`expected exit 0, got ${result.code}: ${result.stderr}`);
  return result.json;
}

/**
 * Judges a successful operation's stdout as the daemon of `dialect` does (the version, then the
 * strict schema) and checks it is canonical bytes; returns the response.
 */
export function response(result: OpResult, dialect: Dialect): any {
  const parsed = parseMessage(LifecycleResponse[dialect], ok(result) === null ? "" : result.stdout.trimEnd(), "lifecycle response");
  if (encodeFrame(LifecycleResponse[dialect], parsed, "lifecycle response") !== result.stdout) throw new Error(`not canonical: ${result.stdout}`);
  return parsed;
}

/** Runs a lifecycle operation of the binary against a ready workspace, as the daemon does. */
export function lifecycle(ws: ReadyWorkspace, name: "pause" | "resume" | "destroy" | "inspect", options: Record<string, unknown> = {}): Promise<RunResult> {
  return runBinary([name, "--workspace-id", ws.id], { stdin: request({ ...ws.options, ...options }) });
}

/** `reconcile` keeping `ws` (so only its abandoned executions are at stake). */
export function reconcileKeeping(ws: ReadyWorkspace): Promise<RunResult> {
  return runBinary(["reconcile"], { stdin: request(ws.options, { workspaceIds: [ws.id] }) });
}

/** The daemon's cleanup path for one execution. */
export function signalOp(ws: ReadyWorkspace, execId: string, signal = "SIGKILL"): Promise<RunResult> {
  return runBinary(["signal", "--workspace-id", ws.id, "--exec-id", execId, "--signal", signal], { stdin: request(ws.options) });
}
