import { realpathSync } from "node:fs";
import type { Invocation } from "../cli.ts";
import { openStore } from "../store/db.ts";
import { destroyWorkspace } from "../workspace/destroy.ts";
import { ownerOf } from "../workspace/owner.ts";
import { readLifecycleRequest, respond } from "./request.ts";

/**
 * `destroy` removes only resources owned by the workspace: its executions (SIGKILL, waited
 * for), its storage under the runtime home (never an adopted directory), its records.
 * A missing workspace answers ok.
 */
export async function destroy(invocation: Invocation): Promise<number> {
  const request = readLifecycleRequest();
  const workspaceId = invocation.flags.get("workspace-id")!;
  const owner = ownerOf(request.options);
  const store = openStore(request.options);
  try {
    await destroyWorkspace(store.db, realpathSync(store.home), workspaceId, owner);
    respond({ type: "ok", protocolVersion: 1 });
    return 0;
  } finally {
    store.db.close();
  }
}
