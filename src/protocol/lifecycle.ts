/**
 * Lifecycle messages (stdin and stdout of every operation but exec) in both dialects, built from
 * the same pieces: only the source kind, the create purpose, the instance id, the placement and
 * materializedFreshContent differ (SPEC-later-dialect.md §5). Every schema is built on first
 * use (`once`, `byDialect`): an `inspect` builds its request and response schemas of one dialect,
 * not the create input's nor the other dialect's.
 */
import * as v from "valibot";
import { once } from "../platform/lazy.ts";
import { jsonMap, protocolVersion, runtimeInstanceId, stringMap } from "./common.ts";
import { byDialect, detected, type Dialect, type OutputOf } from "./dialect.ts";

/** A directory the runtime can see: `host-directory` in the seed dialect, `directory` in the later one. */
function directorySource<K extends string>(kind: K) {
  return v.strictObject({ kind: v.literal(kind), path: v.string() });
}

const gitSource = once(() =>
  v.strictObject({
    kind: v.literal("git"),
    url: v.string(),
    revision: v.string(),
    subdirectory: v.optional(v.string()),
  }),
);

/** Where a project's files come from. */
export const ProjectSource = byDialect(
  () => v.variant("kind", [directorySource("host-directory"), gitSource()]),
  () => v.variant("kind", [directorySource("directory"), gitSource()]),
);

/** One ref to fetch for a change-request checkout. */
const checkoutRef = () =>
  v.strictObject({
    remoteName: v.optional(v.string()),
    remoteRef: v.string(),
  });

const changeRequestFields = () => ({
  forge: v.optional(v.string()),
  changeRequestNumber: v.optional(v.number()),
  githubPrNumber: v.optional(v.number()),
  headRef: v.string(),
  headRepositoryOwner: v.optional(v.string()),
  baseRefName: v.string(),
  checkoutRefs: v.optional(v.array(checkoutRef())),
  localBranchName: v.optional(v.string()),
  pushRemoteUrl: v.optional(v.string()),
  trackOriginHead: v.optional(v.boolean()),
});

/** What a resolved worktree placement checks out (both dialects). */
const resolvedWorktreeSource = () =>
  v.variant("kind", [
    v.strictObject({ kind: v.literal("branch-off"), baseBranch: v.string(), branchName: v.string() }),
    v.strictObject({ kind: v.literal("checkout-branch"), branchName: v.string() }),
    v.strictObject({ kind: v.literal("checkout-change-request"), ...changeRequestFields() }),
    v.strictObject({ kind: v.literal("checkout-github-pr"), ...changeRequestFields() }),
  ]);

/** How the workspace is placed relative to its project (both dialects). */
const placementIntent = once(() => v.variant("kind", [
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
    source: resolvedWorktreeSource(),
    worktreeSlug: v.string(),
    relativeCwd: v.optional(v.string()),
  }),
]));

/** The first keys of a create input, around the dialect's source. */
function inputHead<S extends v.GenericSchema>(source: S) {
  return {
    workspaceId: v.string(),
    project: v.strictObject({ projectId: v.string(), source }),
    placement: placementIntent(),
  };
}

const inputTail = () => ({
  markFirstAgentBranchAutoName: v.optional(v.boolean()),
  seedPaseoConfigFrom: v.optional(v.string()),
});

/** `create` input. The later dialect adds `purpose: "discovery"` (a short-lived probe) after placement. */
export const CreateInput = byDialect(
  () => v.strictObject({ ...inputHead(ProjectSource.seed), ...inputTail() }),
  () => v.strictObject({ ...inputHead(ProjectSource.later), purpose: v.optional(v.literal("discovery")), ...inputTail() }),
);

/**
 * The keys of a lifecycle request after the version (and the later dialect's instance id). The
 * input's schema is built only when a request carries one (`create`).
 */
function requestTail<I extends v.GenericSchema>(input: () => I) {
  return { input: v.optional(v.lazy(input)), options: jsonMap, workspaceIds: v.optional(v.array(v.string())) };
}

/** stdin of every lifecycle operation (and of `signal`); the later dialect's carries runtimeInstanceId second. */
export const LifecycleRequest = detected(
  () => v.strictObject({ protocolVersion, ...requestTail(() => CreateInput.seed) }),
  () => v.strictObject({ protocolVersion, runtimeInstanceId, ...requestTail(() => CreateInput.later) }),
);

/** Public workspace state: never a root, revision, container or supervisor detail (both dialects). */
const state = once(() =>
  v.strictObject({
    workspaceId: v.string(),
    lifecycle: v.picklist(["ready", "paused"]),
    lifecycleEnvironment: v.optional(stringMap),
  }),
);

/** Descriptive placement; `cwd` is never execution authority. Only the seed dialect has hostVisiblePath. */
export const Placement = byDialect(
  () => v.strictObject({ cwd: v.string(), hostVisiblePath: v.optional(v.string()) }),
  () => v.strictObject({ cwd: v.string() }),
);

function inspection<P extends v.GenericSchema>(placement: P) {
  return v.variant("status", [
    v.strictObject({ status: v.literal("missing") }),
    v.strictObject({ status: v.literal("paused"), state: state(), placement }),
    v.strictObject({ status: v.literal("ready"), state: state(), placement }),
    v.strictObject({ status: v.literal("error"), message: v.string() }),
  ]);
}

/** The `inspect` answer. */
export const Inspection = byDialect(
  () => inspection(Placement.seed),
  () => inspection(Placement.later),
);

const stateHead = () => ({ type: v.literal("state"), protocolVersion, state: state() });

/** Each response type on its own: a call validates its answer against that one, built alone. */
const responses = {
  state: byDialect(
    () => v.strictObject({ ...stateHead(), placement: Placement.seed }),
    () => v.strictObject({ ...stateHead(), placement: Placement.later, materializedFreshContent: v.optional(v.boolean()) }),
  ),
  inspection: byDialect(
    () => v.strictObject({ type: v.literal("inspection"), protocolVersion, inspection: Inspection.seed }),
    () => v.strictObject({ type: v.literal("inspection"), protocolVersion, inspection: Inspection.later }),
  ),
  ok: byDialect(
    () => v.strictObject({ type: v.literal("ok"), protocolVersion }),
    () => v.strictObject({ type: v.literal("ok"), protocolVersion }),
  ),
};

/**
 * stdout of every lifecycle operation, in the request's dialect. The later dialect's `state`
 * may carry materializedFreshContent (required on create, omitted on resume).
 */
export const LifecycleResponse = byDialect(
  () => v.variant("type", [responses.state.seed, responses.inspection.seed, responses.ok.seed]),
  () => v.variant("type", [responses.state.later, responses.inspection.later, responses.ok.later]),
);

/**
 * The schema of one response type in one dialect: what LifecycleResponse validates a response
 * of that type against (parseStrict narrows a variant to the option its tag names), without
 * building the other types' schemas.
 */
export function lifecycleResponseOf(type: LifecycleResponse["type"], dialect: Dialect): v.GenericSchema {
  return responses[type][dialect];
}

export type ProjectSource = OutputOf<typeof ProjectSource>;
export type PlacementIntent = v.InferOutput<ReturnType<typeof placementIntent>>;
export type CreateInput = OutputOf<typeof CreateInput>;
export type LifecycleRequest = OutputOf<typeof LifecycleRequest>;
export type State = v.InferOutput<ReturnType<typeof state>>;
export type Placement = OutputOf<typeof Placement>;
export type Inspection = OutputOf<typeof Inspection>;
export type LifecycleResponse = OutputOf<typeof LifecycleResponse>;
