/**
 * Materialization: from a create input to a workspace root on disk. Every step that changes
 * the disk is announced first with `note` (the durable intent), so that a create killed at any
 * instant can be undone exactly by whoever comes next (see remove.ts).
 */
import { constants, copyFileSync, mkdirSync } from "node:fs";
import { lstatOrNull, statOrNull } from "../platform/lookup.ts";
import { dirname, join } from "node:path";
import type { CreateInput } from "../protocol/index.ts";
import type { MaterializationKind, WorkspaceDetails } from "../store/workspaces.ts";
import { copyTree } from "./copy.ts";
import type { GitSettings } from "./git-environment.ts";
import { isDiscovery } from "./input.ts";
import { gitRun, type ChildTracker } from "./git.ts";
import type { RepoGuard } from "./lock.ts";
import { checkoutDir, confine, isInside, storageDir, workspaceKey, workspacesDir } from "./paths.ts";
import { refAction, type RefAction } from "./placement.ts";
import {
  branchCommit,
  currentBranch,
  deleteScratchRef,
  fetchCommit,
  headCommit,
  isAncestor,
  moveBranch,
  repoInfo,
  requireNewBranch,
  requireRepo,
  resolveCommit,
  resolveCommitOrRemote,
  worktreeOnBranch,
  type RepoInfo,
  adoptedGit,
} from "./repo.ts";
import { addWorktree } from "./worktree.ts";
import { removeOwnedTree } from "./owned-tree.ts";

/** What materialization needs from the create that runs it. */
interface MaterializeContext {
  home: string;
  /** The create input as stored: a git URL without its credential. */
  input: CreateInput;
  /** A directory source's real path, as create.ts checked it (never resolved again here). */
  sourceDirectory: string | null;
  /** The operator's bounds on git, and the credential taken out of the source URL (if any). */
  git: GitSettings;
  hostDirectory: "adopt" | "clone";
  /** Durably records what is about to be made (replaces the previous note). */
  note(kind: MaterializationKind, details: WorkspaceDetails): void;
  tracker: ChildTracker;
  /** Serializes worktree changes in the user's repository. */
  guard: RepoGuard;
  /** The commit a branch was made at, when an earlier create of this workspace id made it (create.ts branchMadeFor). */
  madeBranch(commonDir: string, branch: string): string | null;
}

/** A materialized workspace. */
export interface Built {
  kind: MaterializationKind;
  root: string;
  details: WorkspaceDetails;
}

/** Materializes the workspace described by `ctx.input`. */
export async function materialize(ctx: MaterializeContext): Promise<Built> {
  const source = ctx.input.project.source;
  const built =
    source.kind === "git"
      ? await cloneUrl(ctx, source.url, source.revision, source.subdirectory ?? "")
      : await fromHostDirectory(ctx, checkedSource(ctx));
  const details = { ...built.details, markFirstAgentBranchAutoName: ctx.input.markFirstAgentBranchAutoName };
  const result = { ...built, details };
  if (ctx.input.seedPaseoConfigFrom !== undefined && !isDiscovery(ctx.input)) seedConfig(ctx, result, ctx.input.seedPaseoConfigFrom);
  return result;
}

function checkedSource(ctx: MaterializeContext): string {
  if (ctx.sourceDirectory === null) throw new Error("a directory source was not resolved before materialization");
  return ctx.sourceDirectory;
}

async function fromHostDirectory(ctx: MaterializeContext, source: string): Promise<Built> {
  const action = refAction(ctx.input.placement);
  if (action.type !== "existing") return await worktree(ctx, requireRepo(source, `a ${ctx.input.placement.kind} placement`), action);
  if (ctx.hostDirectory === "adopt") return adopt(ctx, source);
  const repo = repoInfo(source);
  return repo ? await cloneHost(ctx, repo) : copyHost(ctx, source);
}

/**
 * The host directory itself is the workspace: nothing is made, nothing will be deleted. Its
 * git dirs are recorded now, while they are still the user's (the sandbox never reads `.git`).
 */
function adopt(ctx: MaterializeContext, source: string): Built {
  const root = confine(source, relativeCwd(ctx), "input.placement.relativeCwd");
  const details: WorkspaceDetails = { branch: repoInfo(source) ? currentBranch(source) : "", git: repoInfo(source) ? adoptedGit(root) : null };
  ctx.note("adopted", details);
  return { kind: "adopted", root, details };
}

/** A plain copy of a host directory that is not a git repository. */
function copyHost(ctx: MaterializeContext, source: string): Built {
  const checkout = prepareCheckout(ctx);
  const details: WorkspaceDetails = { checkout, branch: "" };
  ctx.note("copy", details);
  copyTree(source, checkout);
  return { kind: "copy", root: confine(checkout, relativeCwd(ctx), "input.placement.relativeCwd"), details };
}

/**
 * A private clone of the host repository at its current commit: committed content only. Its
 * objects are copies (`--no-hardlinks`): a file shared with the user's object store would let a
 * workload rewrite the user's objects in place.
 */
async function cloneHost(ctx: MaterializeContext, repo: RepoInfo): Promise<Built> {
  const head = headCommit(repo.toplevel);
  if (!head) throw new Error(`${repo.toplevel} has no commit to clone yet`);
  const branch = currentBranch(repo.toplevel);
  const checkout = prepareCheckout(ctx);
  ctx.note("clone", { checkout });
  await gitRun(dirname(checkout), ["clone", "--no-checkout", "--no-hardlinks", "--", repo.toplevel, checkout], ctx.tracker, hostGit(ctx));
  await gitRun(checkout, branch ? ["checkout", "-B", branch, head] : ["checkout", "--detach", head], ctx.tracker, hostGit(ctx));
  const base = confine(checkout, repo.prefix, "the source directory");
  return { kind: "clone", root: confine(base, relativeCwd(ctx), "input.placement.relativeCwd"), details: { checkout, branch, head } };
}

/** A worktree of the user's repository in owned storage, for branch / checkout / resolved placements. */
async function worktree(ctx: MaterializeContext, repo: RepoInfo, action: Exclude<RefAction, { type: "existing" }>): Promise<Built> {
  const checkout = prepareCheckout(ctx);
  const details = await ctx.guard(repo.commonDir, () => addOwnWorktree(ctx, repo, checkout, action));
  const withHead = { ...details, branch: currentBranch(checkout), head: headCommit(checkout) ?? undefined };
  const base = confine(checkout, repo.prefix, "the source directory");
  return { kind: "worktree", root: confine(base, relativeCwd(ctx), "input.placement.relativeCwd"), details: withHead };
}

/** The git part of `worktree`, run under the repository's worktree lock. */
async function addOwnWorktree(ctx: MaterializeContext, repo: RepoInfo, checkout: string, action: Exclude<RefAction, { type: "existing" }>): Promise<WorkspaceDetails> {
  const details: WorkspaceDetails = { checkout, repo: repo.toplevel, commonDir: repo.commonDir };
  if (action.type === "new-branch" && isOwnKeptBranch(ctx, repo, action.branch)) {
    // Made by this workspace id's earlier create and kept by its destroy: its commits come back.
    ctx.note("worktree", details);
    await addWorktree(repo.toplevel, checkout, { ref: action.branch }, ctx.tracker, hostGit(ctx));
    return details;
  }
  if (action.type === "new-branch") {
    requireNewBranch(repo.toplevel, action.branch, "branch");
    const base = resolveCommit(repo.toplevel, action.base);
    if (!base) throw new Error(`base ref ${JSON.stringify(action.base)} does not name a commit in ${repo.toplevel}`);
    const noted = { ...details, branchChange: { name: action.branch, before: null, after: base } };
    ctx.note("worktree", noted);
    await addWorktree(repo.toplevel, checkout, { newBranch: action.branch, base: action.base }, ctx.tracker, hostGit(ctx));
    return noted;
  }
  if (action.type === "checkout") {
    ctx.note("worktree", details);
    await addWorktree(repo.toplevel, checkout, { ref: action.ref }, ctx.tracker, hostGit(ctx));
    return details;
  }
  const before = branchCommit(repo.toplevel, action.branch);
  const scratch = scratchRef(ctx);
  ctx.note("worktree", { ...details, scratchRef: scratch, branchChange: { name: action.branch, before, after: null } });
  const commit = await fetchCommit(repo.toplevel, action.refs, scratch, ctx.tracker, hostGit(ctx));
  const noted = { ...details, scratchRef: scratch, branchChange: { name: action.branch, before, after: commit } };
  ctx.note("worktree", noted);
  moveBranch(repo.toplevel, action.branch, commit, before);
  deleteScratchRef(repo.toplevel, scratch);
  await addWorktree(repo.toplevel, checkout, { ref: action.branch }, ctx.tracker, hostGit(ctx));
  return noted;
}

/**
 * Whether `branch` exists because an earlier create of this same workspace id made it (the
 * store says so; destroy keeps branches), no worktree has it checked out, and it still descends
 * from the commit it was made at (a branch of that name made anew by someone else does not).
 * Any other existing branch is refused as a new-branch placement always refuses it.
 */
function isOwnKeptBranch(ctx: MaterializeContext, repo: RepoInfo, branch: string): boolean {
  const base = ctx.madeBranch(repo.commonDir, branch);
  if (base === null || branchCommit(repo.toplevel, branch) === null) return false;
  if (worktreeOnBranch(repo.toplevel, `refs/heads/${branch}`) !== null) return false;
  return isAncestor(repo.toplevel, base, `refs/heads/${branch}`);
}

/** A clone of a git URL; `revision` is checked out detached ("" = the remote's default branch). */
async function cloneUrl(ctx: MaterializeContext, url: string, revision: string, subdirectory: string): Promise<Built> {
  const checkout = prepareCheckout(ctx);
  ctx.note("clone", { checkout });
  if (revision === "") {
    await gitRun(dirname(checkout), ["clone", "--", url, checkout], ctx.tracker, ctx.git);
  } else {
    await gitRun(dirname(checkout), ["clone", "--no-checkout", "--", url, checkout], ctx.tracker, ctx.git);
    await gitRun(checkout, ["checkout", "--detach", resolveCommitOrRemote(checkout, revision, "revision")], ctx.tracker, ctx.git);
  }
  await placeInClone(ctx, checkout, refAction(ctx.input.placement));
  const base = confine(checkout, subdirectory, "input.project.source.subdirectory");
  const details = { checkout, branch: currentBranch(checkout), head: headCommit(checkout) ?? undefined };
  return { kind: "clone", root: confine(base, relativeCwd(ctx), "input.placement.relativeCwd"), details };
}

/** Applies a placement inside a private clone: plain checkouts, no worktree needed. */
async function placeInClone(ctx: MaterializeContext, clone: string, action: RefAction): Promise<void> {
  if (action.type === "existing") return;
  if (action.type === "new-branch") {
    requireNewBranch(clone, action.branch, "branch");
    const base = resolveCommitOrRemote(clone, action.base, "base ref");
    await gitRun(clone, ["checkout", "-b", action.branch, base], ctx.tracker, ctx.git);
  } else if (action.type === "checkout") {
    await gitRun(clone, ["checkout", action.ref], ctx.tracker, ctx.git);
  } else {
    requireNewBranch(clone, action.branch, "local branch");
    const commit = await fetchCommit(clone, action.refs, scratchRef(ctx), ctx.tracker, ctx.git);
    await gitRun(clone, ["checkout", "-b", action.branch, commit], ctx.tracker, ctx.git);
  }
}

/** Copies `paseo.json` from `from` into the root when it is there and the root has none. */
function seedConfig(ctx: MaterializeContext, built: Built, from: string): void {
  const source = join(from, "paseo.json");
  const target = join(built.root, "paseo.json");
  if (!isFile(source) || exists(target)) return;
  built.details.seeded = { from: source, into: target };
  ctx.note(built.kind, built.details);
  copyFileSync(source, target, constants.COPYFILE_EXCL);
}

/** Creates the storage directory and returns the (not yet existing) checkout path in it. */
function prepareCheckout(ctx: MaterializeContext): string {
  const placement = ctx.input.placement;
  const slug = "worktreeSlug" in placement ? placement.worktreeSlug : undefined;
  const checkout = checkoutDir(ctx.home, ctx.input.workspaceId, slug);
  const storage = storageDir(ctx.home, ctx.input.workspaceId);
  if (!isInside(workspacesDir(ctx.home), storage)) throw new Error(`refusing storage ${storage} outside ${workspacesDir(ctx.home)}`);
  // Leftovers of an earlier attempt were already removed with its record; anything still here is ours too.
  removeOwnedTree(storage);
  mkdirSync(storage, { recursive: true, mode: 0o700 });
  return checkout;
}

/** Where a change request's head is fetched to first: our own namespace, one ref per workspace. */
function scratchRef(ctx: MaterializeContext): string {
  return `refs/paseo-host-runtime/fetch-${workspaceKey(ctx.input.workspaceId)}`;
}

/**
 * git for a host-directory source: the operator's policy plus the file transport, since cloning
 * the host repository is a local clone. No credential: the user's own repository has its own.
 */
function hostGit(ctx: MaterializeContext): GitSettings {
  const { protocols } = ctx.git.policy;
  return { policy: { ...ctx.git.policy, protocols: protocols.includes("file") ? protocols : [...protocols, "file"] } };
}

function relativeCwd(ctx: MaterializeContext): string {
  return ctx.input.placement.relativeCwd ?? "";
}

function isFile(path: string): boolean {
  return statOrNull(path)?.isFile() ?? false;
}

function exists(path: string): boolean {
  return lstatOrNull(path) !== null;
}
