import { basename, resolve } from "node:path";
import { UsageError, type Invocation } from "../argv.ts";
import { diagnose } from "../output.ts";
import {
  LifecycleRequest,
  LifecycleResponse,
  parseMessage,
  parseStrict,
  type CreateInput,
  type Placement,
  type PlacementIntent,
  type ProjectSource,
  type State,
} from "../protocol/index.ts";
import { readOptions } from "../options.ts";
import { openExistingStore } from "../store/db.ts";
import { placedHost } from "../store/placements.ts";
import { operatorOptions, printJson, printLines, shellQuote, streamOperation, suggestion } from "./common.ts";
import { selection } from "./selection.ts";
import { remoteRuntime } from "./remote-hosts.ts";
import { warnOtherVersions } from "./remote-version.ts";

/** `scheme://…` or scp-like `user@host:path`: a git URL rather than a host directory. */
function isGitUrl(source: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(source) || /^[^/\s@]+@[^/\s:]+:/.test(source);
}

/** The flags as a create input, or a usage message. */
function createInput(invocation: Invocation): CreateInput | string {
  const flag = (name: string) => invocation.flags.get(name);
  const workspaceId = flag("workspace-id")!;
  const given = flag("source")!;
  let source: ProjectSource;
  if (isGitUrl(given)) {
    source = { kind: "git", url: given, revision: flag("revision") ?? "" };
  } else {
    if (flag("revision") !== undefined) return "--revision applies only to a git URL --source";
    source = { kind: "host-directory", path: resolve(given) };
  }
  const branch = flag("branch");
  const base = flag("base");
  const checkout = flag("checkout");
  const relativeCwd = flag("cwd");
  if (branch !== undefined && checkout !== undefined) return "give either --branch (with --base) or --checkout, not both";
  if (branch !== undefined && base === undefined) return "--branch needs --base REF (the commit or branch the new branch starts at)";
  if (base !== undefined && branch === undefined) return "--base goes with --branch NAME";
  let placement: PlacementIntent;
  if (branch !== undefined) placement = { kind: "branch", branchName: branch, baseRef: base! };
  else if (checkout !== undefined) placement = { kind: "checkout", ref: checkout };
  else placement = { kind: "existing" };
  if (relativeCwd !== undefined) placement.relativeCwd = relativeCwd;
  const projectId = flag("project-id") ?? (basename(source.kind === "git" ? source.url.replace(/\/+$/, "") : source.path).replace(/\.git$/, "") || workspaceId);
  return { workspaceId, project: { projectId, source }, placement };
}

/**
 * `new`: builds the create request a daemon would send from flags, runs the runtime's own
 * `create` with it (for a remote runtime through `--remote`, which places the workspace on a
 * host and ships a host directory there, as for the daemon), and shows the result readably
 * (`--json`: the create response itself).
 */
export async function newWorkspace(invocation: Invocation): Promise<number> {
  const input = createInput(invocation);
  if (typeof input === "string") throw new UsageError(input, invocation.command);
  const options = operatorOptions(invocation);
  const remote = selection(invocation).remote !== null;
  const hostDirectory = invocation.flags.get("host-directory");
  if (hostDirectory !== undefined && remote) throw new UsageError("--host-directory: a remote runtime always clones a host directory on its host (it cannot adopt a directory of this machine)", invocation.command);
  if (hostDirectory !== undefined) options.hostDirectory = hostDirectory;
  const request = parseStrict(LifecycleRequest, { protocolVersion: 1, input, options }, "create request");
  if (remote) {
    // The create may land on any of its hosts.
    const runtime = await remoteRuntime(selection(invocation));
    await warnOtherVersions("new", runtime.ctx.hosts, runtime.ctx.settings);
  }
  const result = await streamOperation(["create", "--workspace-id", input.workspaceId], request, inFlagWords);
  if (result.status !== 0) {
    diagnose(`new: create of workspace ${JSON.stringify(input.workspaceId)} failed (exit ${result.status}); see the reason above`);
    return 1;
  }
  const response = parseMessage(LifecycleResponse.seed, result.stdout, "create response");
  if (response.type !== "state") throw new Error(`create answered ${response.type}, expected state`);
  if (invocation.switches.has("json")) {
    printJson(response);
    return 0;
  }
  const source = input.project.source;
  const host = remote ? placedOn(options, input.workspaceId) : null;
  const lines = stateLines(response.state, response.placement, [
    ...hostLine(host),
    `  source       ${source.kind === "git" ? `${source.url}${source.revision ? ` @ ${source.revision}` : ""}` : source.path}`,
    `  placement    ${describePlacement(input.placement)}`,
  ]);
  lines.push(`next: ${suggestion(invocation, `run --workspace-id ${shellQuote(response.state.workspaceId)}`)} -- COMMAND...`);
  printLines(lines);
  return 0;
}

/** The create request's fields, as the flags of `new` that filled them. */
const FLAG_OF_FIELD: Readonly<Record<string, string>> = {
  "input.project.source.path": "--source",
  "input.project.source.url": "--source",
  "input.project.source.revision": "--revision",
  "input.project.projectId": "--project-id",
  "input.placement.branchName": "--branch",
  "input.placement.baseRef": "--base",
  "input.placement.ref": "--checkout",
  "input.placement.relativeCwd": "--cwd",
  "input.workspaceId": "--workspace-id",
};
const FIELD = new RegExp(Object.keys(FLAG_OF_FIELD).map((field) => field.replaceAll(".", "\\.")).join("|"), "g");

/** A line of create's diagnostics with the request's field paths named as the flags a person typed. */
function inFlagWords(line: string): string {
  return line.replace(FIELD, (field) => FLAG_OF_FIELD[field]!);
}

/** The host a remote runtime's create placed the workspace on (its record in the local home), or null. */
function placedOn(options: Record<string, unknown>, workspaceId: string): string | null {
  const store = openExistingStore(options);
  if (!store) return null;
  try {
    return placedHost(store.db, readOptions(options).owner, workspaceId);
  } finally {
    store.db.close();
  }
}

/** The `host` line of stateLines' `extra` for a remote runtime's workspace (its key); none here. */
export function hostLine(host: string | null): string[] {
  return host === null ? [] : [`  host         ${host}`];
}

/** A workspace's public state as people read it (new, workspace resume, workspace inspect). */
export function stateLines(state: State, placement: Placement, extra: string[] = []): string[] {
  const lines = [`workspace ${state.workspaceId} is ${state.lifecycle}`, ...extra, `  cwd          ${placement.cwd}`];
  // Only the seed dialect's placement has hostVisiblePath.
  if ("hostVisiblePath" in placement && placement.hostVisiblePath !== undefined) lines.push(`  host path    ${placement.hostVisiblePath}`);
  for (const [key, value] of Object.entries(state.lifecycleEnvironment ?? {})) lines.push(`  env          ${key}=${value}`);
  return lines;
}

function describePlacement(placement: PlacementIntent): string {
  const cwd = placement.relativeCwd ? `, cwd ${placement.relativeCwd}` : "";
  switch (placement.kind) {
    case "existing":
      return `existing${cwd}`;
    case "branch":
      return `new branch ${placement.branchName} from ${placement.baseRef} in its own worktree${cwd}`;
    case "checkout":
      return `${placement.ref} checked out in its own worktree${cwd}`;
    default:
      return `${placement.kind}${cwd}`;
  }
}
