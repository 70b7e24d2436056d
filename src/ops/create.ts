import type { Invocation } from "../cli.ts";
import { requireSandbox } from "../platform/sandbox.ts";
import { withStore } from "../store/db.ts";
import { claimCreate, finishCreate, noteIntent, recoverAbandoned, undoCreate } from "../workspace/create.ts";
import { createInputOf, effectiveHostDirectory } from "../workspace/input.ts";
import { childTracker, repoGuard } from "../workspace/lock.ts";
import { materialize } from "../workspace/materialize.ts";
import { stateResponse } from "../workspace/state.ts";
import { readLifecycleCall, respond } from "./request.ts";

/**
 * `create`: idempotent. Everything is checked before anything changes; the intent is recorded
 * before the disk is touched; a failure removes what this create made, and a create killed
 * midway is cleaned up by the next one.
 */
export async function create(invocation: Invocation): Promise<number> {
  const { request, options } = readLifecycleCall();
  const { owner } = options;
  // Fail closed: a workspace meant to be sandboxed is never made usable without a working sandbox.
  if (options.isolation === "sandbox") requireSandbox(options.network);
  const input = createInputOf(request, invocation.flags.get("workspace-id")!);
  const hostDirectory = effectiveHostDirectory(input, options.hostDirectory);
  return withStore(options, async ({ db, home }) => {
    const claim = await claimCreate(db, input, owner, hostDirectory);
    if (claim.existing) {
      respond(stateResponse(claim.existing, options));
      return 0;
    }
    if (claim.abandoned) await recoverAbandoned(db, home, claim.abandoned, input, hostDirectory);
    let record;
    try {
      const built = await materialize({
        home,
        input,
        hostDirectory,
        note: noteIntent(db, input.workspaceId),
        tracker: childTracker(db, input.workspaceId),
        guard: repoGuard(db),
      });
      record = finishCreate(db, input.workspaceId, built);
    } catch (error) {
      await undoCreate(db, home, input.workspaceId);
      throw error;
    }
    respond(stateResponse(record, options));
    return 0;
  });
}
