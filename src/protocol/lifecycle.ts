import * as v from "valibot";
import { jsonMap, protocolVersion, stringMap } from "./common.ts";

/** Where a project's files come from. */
export const ProjectSource = v.variant("kind", [
  v.strictObject({ kind: v.literal("host-directory"), path: v.string() }),
  v.strictObject({
    kind: v.literal("git"),
    url: v.string(),
    revision: v.string(),
    subdirectory: v.optional(v.string()),
  }),
]);

/** One ref to fetch for a change-request checkout. */
export const CheckoutRef = v.strictObject({
  remoteName: v.optional(v.string()),
  remoteRef: v.string(),
});

const changeRequestFields = {
  forge: v.optional(v.string()),
  changeRequestNumber: v.optional(v.number()),
  githubPrNumber: v.optional(v.number()),
  headRef: v.string(),
  headRepositoryOwner: v.optional(v.string()),
  baseRefName: v.string(),
  checkoutRefs: v.optional(v.array(CheckoutRef)),
  localBranchName: v.optional(v.string()),
  pushRemoteUrl: v.optional(v.string()),
  trackOriginHead: v.optional(v.boolean()),
};

/** What a resolved worktree placement checks out. */
export const ResolvedWorktreeSource = v.variant("kind", [
  v.strictObject({ kind: v.literal("branch-off"), baseBranch: v.string(), branchName: v.string() }),
  v.strictObject({ kind: v.literal("checkout-branch"), branchName: v.string() }),
  v.strictObject({ kind: v.literal("checkout-change-request"), ...changeRequestFields }),
  v.strictObject({ kind: v.literal("checkout-github-pr"), ...changeRequestFields }),
]);

/** How the workspace is placed relative to its project. */
export const PlacementIntent = v.variant("kind", [
  v.strictObject({ kind: v.literal("existing"), relativeCwd: v.optional(v.string()) }),
  v.strictObject({
    kind: v.literal("branch"),
    branchName: v.string(),
    baseRef: v.string(),
    relativeCwd: v.optional(v.string()),
    worktreeSlug: v.optional(v.string()),
  }),
  v.strictObject({
    kind: v.literal("checkout"),
    ref: v.string(),
    relativeCwd: v.optional(v.string()),
    worktreeSlug: v.optional(v.string()),
  }),
  v.strictObject({
    kind: v.literal("resolved-worktree"),
    source: ResolvedWorktreeSource,
    worktreeSlug: v.string(),
    relativeCwd: v.optional(v.string()),
  }),
]);

/** The project a workspace belongs to. */
export const Project = v.strictObject({ projectId: v.string(), source: ProjectSource });

/** `create` input. */
export const CreateInput = v.strictObject({
  workspaceId: v.string(),
  project: Project,
  placement: PlacementIntent,
  markFirstAgentBranchAutoName: v.optional(v.boolean()),
  seedPaseoConfigFrom: v.optional(v.string()),
});

/** stdin of every lifecycle operation (and of `signal`). */
export const LifecycleRequest = v.strictObject({
  protocolVersion,
  input: v.optional(CreateInput),
  options: jsonMap,
  workspaceIds: v.optional(v.array(v.string())),
});

/** Public workspace state: never a root, revision, container or supervisor detail. */
export const State = v.strictObject({
  workspaceId: v.string(),
  lifecycle: v.picklist(["ready", "paused"]),
  lifecycleEnvironment: v.optional(stringMap),
});

/** Descriptive placement; `cwd` is never execution authority. */
export const Placement = v.strictObject({
  cwd: v.string(),
  hostVisiblePath: v.optional(v.string()),
});

/** The `inspect` answer. */
export const Inspection = v.variant("status", [
  v.strictObject({ status: v.literal("missing") }),
  v.strictObject({ status: v.literal("paused"), state: State, placement: Placement }),
  v.strictObject({ status: v.literal("ready"), state: State, placement: Placement }),
  v.strictObject({ status: v.literal("error"), message: v.string() }),
]);

/** stdout of every lifecycle operation. */
export const LifecycleResponse = v.variant("type", [
  v.strictObject({ type: v.literal("state"), protocolVersion, state: State, placement: Placement }),
  v.strictObject({ type: v.literal("inspection"), protocolVersion, inspection: Inspection }),
  v.strictObject({ type: v.literal("ok"), protocolVersion }),
]);

export type ProjectSource = v.InferOutput<typeof ProjectSource>;
export type CheckoutRef = v.InferOutput<typeof CheckoutRef>;
export type ResolvedWorktreeSource = v.InferOutput<typeof ResolvedWorktreeSource>;
export type PlacementIntent = v.InferOutput<typeof PlacementIntent>;
export type CreateInput = v.InferOutput<typeof CreateInput>;
export type LifecycleRequest = v.InferOutput<typeof LifecycleRequest>;
export type State = v.InferOutput<typeof State>;
export type Placement = v.InferOutput<typeof Placement>;
export type Inspection = v.InferOutput<typeof Inspection>;
export type LifecycleResponse = v.InferOutput<typeof LifecycleResponse>;
