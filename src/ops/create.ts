import { realpathSync } from "node:fs";
import type { Invocation } from "../cli.ts";
import { openStore } from "../store/db.ts";
import { claimCreate, finishCreate, noteIntent, recoverAbandoned, undoCreate } from "../workspace/create.ts";
import { createInputOf, effectiveHostDirectory } from "../workspace/input.ts";
import { childTracker, repoGuard } from "../workspace/lock.ts";
import { materialize, type Built } from "../workspace/materialize.ts";
import { ownerOf } from "../workspace/owner.ts";
import { lifecycleSettings } from "../workspace/settings.ts";
import { stateResponse } from "../workspace/state.ts";
import { readLifecycleRequest, respond } from "./request.ts";

/**
 * `create`: idempotent. Everything is checked before anything changes; the intent is recorded
 * before the disk is touched; a failure removes what this create made, and a create killed
 * midway is cleaned up by the next one.
 */
export async function create(invocation: Invocation): Promise<number> {
  const request = readLifecycleRequest();
  const input = createInputOf(request, invocation.flags.get("workspace-id")!);
  const owner = ownerOf(request.options);
  const settings = lifecycleSettings(request.options);
  const hostDirectory = effectiveHostDirectory(input, settings.hostDirectory);
  const store = openStore(request.options);
  const { db } = store;
  try {
    const home = realpathSync(store.home);
    const claim = await claimCreate(db, input, owner, hostDirectory);
    if (claim.existing) {
      respond(stateResponse(claim.existing, settings));
      return 0;
    }
    if (claim.abandoned) await recoverAbandoned(db, home, claim.abandoned, input, hostDirectory);
    let built: Built;
    try {
      built = await materialize({
        home,
        input,
        hostDirectory,
        note: noteIntent(db, input.workspaceId),
        tracker: childTracker(db, input.workspaceId),
        guard: repoGuard(db),
      });
    } catch (error) {
      await undoCreate(db, home, input.workspaceId);
      throw error;
    }
    respond(stateResponse(finishCreate(db, input.workspaceId, built), settings));
    return 0;
  } finally {
    db.close();
  }
}
