import type { Invocation } from "../../cli.ts";
import { readOptions } from "../../options.ts";
import { diagnose } from "../../output.ts";
import { LifecycleResponse, parseMessage } from "../../protocol/index.ts";
import { getWorkspace, type WorkspaceStatus } from "../../store/workspaces.ts";
import { openExistingStore, operatorOptions, printJson, runOperation } from "./common.ts";
import { liveExecutions } from "./ps.ts";

/** What the store says about a workspace before rm touches it, without creating a home to look. */
function survey(options: Record<string, unknown>, workspaceId: string): { status: WorkspaceStatus | null; live: string[] } {
  const { store } = openExistingStore(options);
  if (!store) return { status: null, live: [] };
  try {
    const record = getWorkspace(store.db, workspaceId);
    if (!record) return { status: null, live: [] };
    // Another owner's workspace: destroy refuses it ("ownership mismatch") before anything else.
    if (record.owner !== readOptions(options).owner) return { status: record.status, live: [] };
    return { status: record.status, live: liveExecutions(store.db, workspaceId).map((execution) => execution.execId) };
  } finally {
    store.db.close();
  }
}

/** Runs one lifecycle operation of this binary; its stderr reaches the human. Returns whether it answered `ok`. */
function operation(op: "pause" | "destroy", workspaceId: string, options: Record<string, unknown>): boolean {
  const result = runOperation([op, "--workspace-id", workspaceId], { protocolVersion: 1, options });
  if (result.status !== 0) {
    diagnose(`rm: ${op} of workspace ${JSON.stringify(workspaceId)} failed (exit ${result.status}); see the reason above`);
    return false;
  }
  const response = parseMessage(LifecycleResponse, result.stdout, `${op} response`);
  if (response.type !== "ok") throw new Error(`${op} answered ${response.type}, expected ok`);
  return true;
}

/**
 * `rm`: runs this binary's own `destroy` for one workspace, as the daemon would (storage it owns
 * removed, an adopted directory left alone). Like `docker rm`, it refuses while executions are
 * live; with `--force` it first runs `pause`, which stops them as pause does (SIGTERM,
 * options.stopTimeoutMs, then SIGKILL), then `destroy`.
 */
export function rm(invocation: Invocation): number {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const options = operatorOptions(invocation);
  const force = invocation.switches.has("force");
  const { status, live } = survey(options, workspaceId);
  if (live.length > 0 && !force) {
    diagnose(
      `rm: workspace ${JSON.stringify(workspaceId)} has ${live.length} live execution(s) (${live.join(", ")}); nothing was changed. ` +
        "Stop them first (paseo-host-runtime workspace pause), or pass --force (SIGTERM, the stopTimeoutMs grace, then SIGKILL)",
    );
    return 1;
  }
  // pause stops with the grace; a workspace being created or destroyed has nothing pause could stop.
  if (force && (status === "ready" || status === "paused") && !operation("pause", workspaceId, options)) return 1;
  if (!operation("destroy", workspaceId, options)) return 1;
  const existed = status !== null;
  if (invocation.switches.has("json")) printJson({ workspaceId, existed, destroyed: true, stoppedExecutions: force ? live.length : 0 });
  else if (!existed) console.log(`workspace ${workspaceId} did not exist; nothing to do`);
  else console.log(`workspace ${workspaceId} destroyed${force && live.length ? ` (${live.length} live execution(s) stopped first)` : ""}`);
  return 0;
}
