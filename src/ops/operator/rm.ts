import type { Invocation } from "../../cli.ts";
import { diagnose } from "../../output.ts";
import { LifecycleResponse, parseMessage } from "../../protocol/index.ts";
import { getWorkspace, type WorkspaceRecord } from "../../store/workspaces.ts";
import { openExistingStore, operatorOptions, printJson, runOperation } from "./common.ts";

/** The store's record of the workspace (any status), without creating a home to look. */
function recorded(options: Record<string, unknown>, workspaceId: string): WorkspaceRecord | null {
  const { store } = openExistingStore(options);
  if (!store) return null;
  try {
    return getWorkspace(store.db, workspaceId);
  } finally {
    store.db.close();
  }
}

/**
 * `rm`: runs this binary's own `destroy` for one workspace, as the daemon would: its live
 * executions are killed, storage it owns removed, an adopted directory left alone. It speaks the
 * dialect the workspace was created in (a later-dialect workspace with its recorded instance
 * id), so leftovers of either daemon can be removed; the owner must still match.
 */
export function rm(invocation: Invocation): number {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const options = operatorOptions(invocation);
  const record = recorded(options, workspaceId);
  const existed = record !== null;
  const instance = record?.dialect === "later" ? { runtimeInstanceId: record.instanceId } : {};
  const result = runOperation(["destroy", "--workspace-id", workspaceId], { protocolVersion: 1, ...instance, options });
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
