import { heldGitOf } from "../sandbox/git/sandbox-git.ts";
import type { Invocation } from "../argv.ts";
import { withStore } from "../store/db.ts";
import { destroyWorkspace } from "../workspace/destroy.ts";
import { respond } from "../protocol/request.ts";
import { readLifecycleCall } from "../workspace/call.ts";

/**
 * `destroy` removes only resources owned by the workspace: its executions (SIGKILL, waited
 * for), its storage under the runtime home (never an adopted directory), its records.
 * A missing workspace answers ok.
 */
export async function destroy(invocation: Invocation): Promise<number> {
  const { options, owner } = readLifecycleCall();
  const workspaceId = invocation.flags.get("workspace-id")!;
  return withStore(options, async ({ db, home }) => {
    await destroyWorkspace(db, home, workspaceId, owner, heldGitOf);
    respond({ type: "ok", protocolVersion: 1 }, owner.dialect);
    return 0;
  });
}
