/**
 * The public face of a workspace record: State and Placement. Never a revision, a storage
 * path beyond the root, or anything about executions.
 */
import type { Dialect, Inspection, LifecycleResponse, Placement, State } from "../protocol/index.ts";
import type { WorkspaceRecord } from "../store/workspaces.ts";
import type { RuntimeOptions } from "../options.ts";

/** The lifecycle environment: paths relative to the workspace root, the branch, then the operator's entries. */
export function lifecycleEnvironment(record: WorkspaceRecord, settings: RuntimeOptions): Record<string, string> {
  const own = {
    PASEO_SOURCE_CHECKOUT_PATH: ".",
    PASEO_ROOT_PATH: ".",
    PASEO_WORKTREE_PATH: ".",
    PASEO_BRANCH_NAME: record.details.branch ?? "",
  };
  return Object.fromEntries([...Object.entries(own), ...Object.entries(settings.lifecycleEnvironment)]);
}

/**
 * State and placement of a ready or paused workspace. Only the seed dialect has
 * hostVisiblePath (and only when exposeHostVisiblePath allows it).
 */
function publicState(record: WorkspaceRecord, settings: RuntimeOptions, dialect: Dialect): { state: State; placement: Placement } {
  const root = record.root!;
  return {
    state: {
      workspaceId: record.workspaceId,
      lifecycle: record.status === "paused" ? "paused" : "ready",
      lifecycleEnvironment: lifecycleEnvironment(record, settings),
    },
    placement: dialect === "seed" && settings.exposeHostVisiblePath ? { cwd: root, hostVisiblePath: root } : { cwd: root },
  };
}

/**
 * The `state` response of create and resume. `fresh` is create's materializedFreshContent: the
 * later dialect's create answers it, its resume omits it, the seed dialect never has it.
 */
export function stateResponse(record: WorkspaceRecord, settings: RuntimeOptions, dialect: Dialect, fresh?: boolean): LifecycleResponse {
  const response = { type: "state" as const, protocolVersion: 1 as const, ...publicState(record, settings, dialect) };
  return dialect === "later" && fresh !== undefined ? { ...response, materializedFreshContent: fresh } : response;
}

/** The inspection of a ready or paused record whose root was checked (`problem` null when usable). */
export function inspectionOf(record: WorkspaceRecord, settings: RuntimeOptions, problem: string | null, dialect: Dialect): Inspection {
  if (problem) return { status: "error", message: `workspace ${JSON.stringify(record.workspaceId)} ${problem}` };
  const status = record.status === "paused" ? "paused" : "ready";
  return { status, ...publicState(record, settings, dialect) };
}
