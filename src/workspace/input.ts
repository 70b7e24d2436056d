/**
 * Checks on a create input that need no disk, the input as it is kept (no URL credentials,
 * plus a keyed digest of the whole), and comparing a re-create with what exists.
 */
import { realpathSync, statSync } from "node:fs";
import { isAbsolute } from "node:path";
import type { CreateInput, LifecycleRequest, PlacementIntent, ProjectSource } from "../protocol/index.ts";
import { scrubUrlCredentials } from "../redact.ts";
import { digestInput, sameDigest } from "../store/input-digest.ts";
import type { GitCredential } from "./git-environment.ts";
import { checkGitUrl, splitCredential } from "./git-url.ts";
import { checkRelativePath } from "./paths.ts";

/**
 * The create input of a request, after every check that needs no disk. `allowedGitProtocols`
 * is options.allowedGitProtocols: a git URL on another transport is refused here.
 */
export function createInputOf(request: LifecycleRequest, workspaceId: string, allowedGitProtocols: readonly string[]): CreateInput {
  const input = request.input;
  if (!input) throw new Error("create needs `input` in the lifecycle request");
  if (input.workspaceId !== workspaceId) {
    throw new Error(`input.workspaceId ${JSON.stringify(input.workspaceId)} does not match --workspace-id ${JSON.stringify(workspaceId)}`);
  }
  checkSource(input, allowedGitProtocols);
  checkPlacement(input.placement, allowedGitProtocols);
  if (isDiscovery(input) && input.placement.kind !== "existing") {
    throw new Error(`a discovery create runs no repository set-up, so it takes only an "existing" placement, got ${JSON.stringify(input.placement.kind)}`);
  }
  if (input.seedPaseoConfigFrom !== undefined) checkAbsolute(input.seedPaseoConfigFrom, "input.seedPaseoConfigFrom");
  return input;
}

/** A directory the runtime can see: `host-directory` (seed dialect) or `directory` (later dialect). */
export function isDirectorySource(source: ProjectSource): source is Exclude<ProjectSource, { kind: "git" }> {
  return source.kind !== "git";
}

/**
 * A later-dialect `discovery` create: a short-lived probe that gets the same environment as a
 * user workspace (same materialization, lifecycle environment, helper and exec) but no
 * repository set-up: only an `existing` placement (no branch, worktree or fetch in any
 * repository), and no paseo.json seeded.
 */
export function isDiscovery(input: CreateInput): boolean {
  return "purpose" in input && input.purpose === "discovery";
}

function checkSource(input: CreateInput, allowedGitProtocols: readonly string[]): void {
  const source = input.project.source;
  if (isDirectorySource(source)) {
    checkAbsolute(source.path, "input.project.source.path");
    return;
  }
  if (source.url === "" || source.url.includes("\0")) throw new Error("input.project.source.url must be a non-empty git URL without NUL");
  checkGitUrl(source.url, "input.project.source.url", allowedGitProtocols);
  checkRefName(source.revision, "input.project.source.revision", true);
  if (source.subdirectory !== undefined) checkRelativePath(source.subdirectory, "input.project.source.subdirectory");
}

function checkPlacement(placement: PlacementIntent, allowedGitProtocols: readonly string[]): void {
  if (placement.relativeCwd !== undefined) checkRelativePath(placement.relativeCwd, "input.placement.relativeCwd");
  if (placement.kind === "branch") {
    checkRefName(placement.branchName, "input.placement.branchName");
    checkRefName(placement.baseRef, "input.placement.baseRef");
  } else if (placement.kind === "checkout") {
    checkRefName(placement.ref, "input.placement.ref");
  } else if (placement.kind === "resolved-worktree") {
    const source = placement.source;
    if (source.kind === "branch-off") {
      checkRefName(source.baseBranch, "input.placement.source.baseBranch");
      checkRefName(source.branchName, "input.placement.source.branchName");
    } else if (source.kind === "checkout-branch") {
      checkRefName(source.branchName, "input.placement.source.branchName");
    } else {
      checkRefName(source.headRef, "input.placement.source.headRef");
      if (source.localBranchName !== undefined) checkRefName(source.localBranchName, "input.placement.source.localBranchName");
      for (const ref of source.checkoutRefs ?? []) {
        checkRefName(ref.remoteRef, "input.placement.source.checkoutRefs[].remoteRef");
        if (ref.remoteName !== undefined) checkRemote(ref.remoteName, "input.placement.source.checkoutRefs[].remoteName", allowedGitProtocols);
      }
    }
  }
}

function checkAbsolute(path: string, what: string): void {
  if (path.includes("\0")) throw new Error(`${what} must not contain a NUL byte`);
  if (!isAbsolute(path)) throw new Error(`${what} must be an absolute path, got a relative one`);
}

/**
 * A remote git fetches from: a configured remote's name, or (with a ":", which no remote name
 * has) a URL, held to the same transports as a source URL and never carrying a credential.
 */
function checkRemote(remote: string, what: string, allowedGitProtocols: readonly string[]): void {
  checkRefName(remote, what);
  if (!remote.includes(":")) return;
  checkGitUrl(remote, what, allowedGitProtocols);
  if (splitCredential(remote, what).credential) throw new Error(`${what} is a URL with credentials, which a remote given here may not carry; use a configured remote instead`);
}

/** A ref-ish argument handed to git: non-empty, and never something git would read as an option. */
function checkRefName(value: string, what: string, allowEmpty = false): void {
  if (value === "" && allowEmpty) return;
  if (value === "" || value.startsWith("-") || value.includes("\0") || /\s/.test(value)) {
    throw new Error(`${what} must be a non-empty git ref name without whitespace or a leading "-"`);
  }
}

/** A create input as the runtime keeps it, and the credential taken out of its git URL. */
export interface KeptInput {
  /** The input without URL credentials: what is stored, compared and given to git as URLs. */
  input: CreateInput;
  /** Keyed digest of the full input (credentials included). */
  inputDigest: string;
  /** The source URL's credential, for git's environment only (never stored). */
  credential: GitCredential | null;
}

/** Splits a checked create input into what is kept and the credential, under the home's key. */
export function keptInput(home: string, input: CreateInput): KeptInput {
  const source = input.project.source;
  const credential = source.kind === "git" ? splitCredential(source.url, "input.project.source.url").credential : null;
  return { input: scrubUrlCredentials(input), inputDigest: digestInput(home, input), credential };
}

/**
 * Why a re-create is not the same as the recorded create, naming the first difference,
 * or null when it is the same. Only inputs without credentials are ever shown; the digests
 * tell two inputs apart that differ in nothing else.
 */
export function createConflict(
  recorded: { input: unknown; inputDigest: string; hostDirectory: string },
  requested: { input: CreateInput; inputDigest: string; hostDirectory: string },
): string | null {
  if (recorded.hostDirectory !== requested.hostDirectory) {
    return `options.hostDirectory is ${JSON.stringify(requested.hostDirectory)}, but the workspace was created with ${JSON.stringify(recorded.hostDirectory)}`;
  }
  if (sameDigest(recorded.inputDigest, requested.inputDigest)) return null;
  const before = flatten(recorded.input, "input");
  const after = flatten(requested.input, "input");
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    const was = before.get(key);
    const now = after.get(key);
    if (was === now) continue;
    if (now === undefined) return `${key} was ${was} when created and is absent now`;
    if (was === undefined) return `${key} is ${now} now and was absent when created`;
    return `${key} is ${now}, but the workspace was created with ${was}`;
  }
  return "a URL in the input carries other credentials than when the workspace was created";
}

/** Leaf path → JSON text, e.g. "input.project.source.path" → "\"/src\"". */
function flatten(value: unknown, path: string, out = new Map<string, string>()): Map<string, string> {
  if (typeof value === "object" && value !== null) {
    const entries = Array.isArray(value) ? value.map((item, index) => [String(index), item] as const) : Object.entries(value);
    for (const [key, item] of entries) flatten(item, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`, out);
    if (entries.length === 0) out.set(path, JSON.stringify(value));
    return out;
  }
  out.set(path, JSON.stringify(value));
  return out;
}

/** The hostDirectory mode that matters for this input: only a host directory placed "existing" is adopted or cloned. */
export function effectiveHostDirectory(input: CreateInput, hostDirectory: "adopt" | "clone"): "adopt" | "clone" {
  return isDirectorySource(input.project.source) && input.placement.kind === "existing" ? hostDirectory : "adopt";
}

/** The real path of a directory source, or a message naming input.project.source.path. */
export function hostSourceDirectory(path: string): string {
  let real: string;
  try {
    real = realpathSync(path);
  } catch (error) {
    throw new Error(`input.project.source.path ${path} cannot be used: ${(error as Error).message}`);
  }
  if (!statSync(real).isDirectory()) throw new Error(`input.project.source.path ${path} is not a directory`);
  return real;
}
