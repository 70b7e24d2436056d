/**
 * Lifecycle messages (stdin and stdout of every operation but exec) in both dialects, built from
 * the same pieces: only the source kind, the create purpose, the instance id, the placement and
 * materializedFreshContent differ (SPEC-later-dialect.md §5).
 */
import * as v from "valibot";
import { jsonMap, protocolVersion, runtimeInstanceId, stringMap } from "./common.ts";
import { byDialect, detected, type OutputOf } from "./dialect.ts";

/** A directory the runtime can see: `host-directory` in the seed dialect, `directory` in the later one. */
function directorySource<K extends string>(kind: K) {
  return v.strictObject({ kind: v.literal(kind), path: v.string() });
}

const GitSource = v.strictObject({
  kind: v.literal("git"),
  url: v.string(),
  revision: v.string(),
  subdirectory: v.optional(v.string()),
});

/** Where a project's files come from. */
export const ProjectSource = byDialect(
  v.variant("kind", [directorySource("host-directory"), GitSource]),
  v.variant("kind", [directorySource("directory"), GitSource]),
);

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

/** What a resolved worktree placement checks out (both dialects). */
export const ResolvedWorktreeSource = v.variant("kind", [
  v.strictObject({ kind: v.literal("branch-off"), baseBranch: v.string(), branchName: v.string() }),
  v.strictObject({ kind: v.literal("checkout-branch"), branchName: v.string() }),
  v.strictObject({ kind: v.literal("checkout-change-request"), ...changeRequestFields }),
  v.strictObject({ kind: v.literal("checkout-github-pr"), ...changeRequestFields }),
]);

/** How the workspace is placed relative to its project (both dialects). */
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

/** The first keys of a create input, around the dialect's source. */
function inputHead<S extends v.GenericSchema>(source: S) {
  return {
    workspaceId: v.string(),
    project: v.strictObject({ projectId: v.string(), source }),
    placement: PlacementIntent,
  };
}

const inputTail = {
  markFirstAgentBranchAutoName: v.optional(v.boolean()),
  seedPaseoConfigFrom: v.optional(v.string()),
};

/** `create` input. The later dialect adds `purpose: "discovery"` (a short-lived probe) after placement. */
export const CreateInput = byDialect(
  v.strictObject({ ...inputHead(ProjectSource.seed), ...inputTail }),
  v.strictObject({ ...inputHead(ProjectSource.later), purpose: v.optional(v.literal("discovery")), ...inputTail }),
);

/** The keys of a lifecycle request after the version (and the later dialect's instance id). */
function requestTail<I extends v.GenericSchema>(input: I) {
  return { input: v.optional(input), options: jsonMap, workspaceIds: v.optional(v.array(v.string())) };
}

/** stdin of every lifecycle operation (and of `signal`); the later dialect's carries runtimeInstanceId second. */
export const LifecycleRequest = detected(
  v.strictObject({ protocolVersion, ...requestTail(CreateInput.seed) }),
  v.strictObject({ protocolVersion, runtimeInstanceId, ...requestTail(CreateInput.later) }),
);

/** Public workspace state: never a root, revision, container or supervisor detail (both dialects). */
export const State = v.strictObject({
  workspaceId: v.string(),
  lifecycle: v.picklist(["ready", "paused"]),
  lifecycleEnvironment: v.optional(stringMap),
});

const placementEntries = { cwd: v.string() };

/** Descriptive placement; `cwd` is never execution authority. Only the seed dialect has hostVisiblePath. */
export const Placement = byDialect(
  v.strictObject({ ...placementEntries, hostVisiblePath: v.optional(v.string()) }),
  v.strictObject(placementEntries),
);

function inspection<P extends v.GenericSchema>(placement: P) {
  return v.variant("status", [
    v.strictObject({ status: v.literal("missing") }),
    v.strictObject({ status: v.literal("paused"), state: State, placement }),
    v.strictObject({ status: v.literal("ready"), state: State, placement }),
    v.strictObject({ status: v.literal("error"), message: v.string() }),
  ]);
}

/** The `inspect` answer. */
export const Inspection = byDialect(inspection(Placement.seed), inspection(Placement.later));

const stateHead = { type: v.literal("state"), protocolVersion, state: State };

function inspectionResponse<I extends v.GenericSchema>(inspection: I) {
  return v.strictObject({ type: v.literal("inspection"), protocolVersion, inspection });
}

const OkResponse = v.strictObject({ type: v.literal("ok"), protocolVersion });

/**
 * stdout of every lifecycle operation, in the request's dialect. The later dialect's `state`
 * may carry materializedFreshContent (required on create, omitted on resume).
 */
export const LifecycleResponse = byDialect(
  v.variant("type", [v.strictObject({ ...stateHead, placement: Placement.seed }), inspectionResponse(Inspection.seed), OkResponse]),
  v.variant("type", [
    v.strictObject({ ...stateHead, placement: Placement.later, materializedFreshContent: v.optional(v.boolean()) }),
    inspectionResponse(Inspection.later),
    OkResponse,
  ]),
);

export type ProjectSource = OutputOf<typeof ProjectSource>;
export type CheckoutRef = v.InferOutput<typeof CheckoutRef>;
export type ResolvedWorktreeSource = v.InferOutput<typeof ResolvedWorktreeSource>;
export type PlacementIntent = v.InferOutput<typeof PlacementIntent>;
export type CreateInput = OutputOf<typeof CreateInput>;
export type LifecycleRequest = OutputOf<typeof LifecycleRequest>;
export type State = v.InferOutput<typeof State>;
export type Placement = OutputOf<typeof Placement>;
export type Inspection = OutputOf<typeof Inspection>;
export type LifecycleResponse = OutputOf<typeof LifecycleResponse>;
