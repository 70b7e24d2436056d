import type { Invocation } from "../../cli.ts";
import { diagnose } from "../../output.ts";
import { LifecycleResponse, parseMessage } from "../../protocol/index.ts";
import { getWorkspace } from "../../store/workspaces.ts";
import { openExistingStore, operatorOptions, printJson, runOperation } from "./common.ts";

/** Whether the store knows the workspace (any status), without creating a home to look. */
function exists(options: Record<string, unknown>, workspaceId: string): boolean {
  const { store } = openExistingStore(options);
  if (!store) return false;
  try {
    return getWorkspace(store.db, workspaceId) !== null;
  } finally {
    store.db.close();
  }
}

/**
 * `rm`: runs this binary's own `destroy` for one workspace, as the daemon would: its live
 * executions are killed, storage it owns removed, an adopted directory left alone.
 */
export function rm(invocation: Invocation): number {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const options = operatorOptions(invocation);
  const existed = exists(options, workspaceId);
  const result = runOperation(["destroy", "--workspace-id", workspaceId], { protocolVersion: 1, options });
  if (result.status !== 0) {
    diagnose(`rm: destroy of workspace ${JSON.stringify(workspaceId)} failed (exit ${result.status}); see the reason above`);
    return 1;
  }
  const response = parseMessage(LifecycleResponse.seed, result.stdout, "destroy response");
  if (response.type !== "ok") throw new Error(`destroy answered ${response.type}, expected ok`);
  if (invocation.switches.has("json")) printJson({ workspaceId, existed, destroyed: true });
  else console.log(existed ? `workspace ${workspaceId} destroyed` : `workspace ${workspaceId} did not exist; nothing to do`);
  return 0;
}
