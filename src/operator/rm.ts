import type { Invocation } from "../argv.ts";
import { nearestWord } from "../nearest.ts";
import { diagnose } from "../output.ts";
import { callOperation, dialectFields, operatorOptions, printJson, printLines, shellQuote, suggestion } from "./common.ts";
import { onHost, ownerWorkspaceIds, workspaceFacts, type RecordFacts } from "./workspace-facts.ts";

/**
 * Runs the runtime's own `destroy` of a recorded workspace in the dialect it was created in,
 * after `pause` when `stopFirst` (which stops live executions with the grace, as pause does);
 * false when either failed (the reason is on stderr, after `command: … failed`).
 */
export function destroyAsDaemon(command: string, options: Record<string, unknown>, workspaceId: string, record: RecordFacts | null, stopFirst: boolean): boolean {
  const { dialect, fields } = dialectFields(record);
  const request = { ...fields, options };
  // pause stops with the grace; a workspace being created or destroyed has nothing pause could stop.
  const pausable = record?.status === "ready" || record?.status === "paused";
  if (stopFirst && pausable && !callOperation(command, ["pause", "--workspace-id", workspaceId], request, dialect)) return false;
  const response = callOperation(command, ["destroy", "--workspace-id", workspaceId], request, dialect);
  if (!response) return false;
  if (response.type !== "ok") throw new Error(`destroy answered ${response.type}, expected ok`);
  return true;
}

/**
 * `rm`: runs the runtime's own `destroy` for one workspace, as the daemon would (storage it owns
 * removed, an adopted directory left alone; for a remote runtime on the workspace's host). It speaks the dialect the workspace was created in
 * (a later-dialect workspace with its recorded instance id), so leftovers of either daemon can be
 * removed; the owner must still match. Like `docker rm`, it refuses while executions are live;
 * with `--force` it first runs `pause`, which stops them as pause does (SIGTERM,
 * options.stopTimeoutMs, then SIGKILL), then `destroy`.
 */
export async function rm(invocation: Invocation): Promise<number> {
  const workspaceId = invocation.flags.get("workspace-id")!;
  const options = operatorOptions(invocation);
  const force = invocation.switches.has("force");
  const { record, liveExecIds, owner, host } = await workspaceFacts(invocation, workspaceId);
  const where = onHost(host);
  if (record === null && !force) {
    // Unlike the protocol's idempotent destroy, a person's rm of an id nothing has is a mistake to say so (as docker rm does).
    const near = nearestWord(workspaceId, await ownerWorkspaceIds(invocation, workspaceId));
    const guess = near === null ? "" : ` (did you mean ${JSON.stringify(near)}?)`;
    diagnose(`rm: no workspace ${JSON.stringify(workspaceId)} of owner ${JSON.stringify(owner)}${where}${guess}; nothing was changed. ${suggestion(invocation, "ls")} lists them; rm --force accepts an id that does not exist`);
    return 1;
  }
  // Another owner's workspace: destroy refuses it ("ownership mismatch") before anything else.
  const live = record !== null && record.owner === owner ? liveExecIds : [];
  if (live.length > 0 && !force) {
    diagnose(
      `rm: workspace ${JSON.stringify(workspaceId)}${where} has ${live.length} live execution(s) (${live.join(", ")}); nothing was changed. ` +
        `Stop them first (${suggestion(invocation, `workspace pause -w ${shellQuote(workspaceId)}`)}), or pass --force (SIGTERM, the stopTimeoutMs grace, then SIGKILL)`,
    );
    return 1;
  }
  if (!destroyAsDaemon("rm", options, workspaceId, record, force)) return 1;
  const existed = record !== null;
  const stopped = force ? live.length : 0;
  if (invocation.switches.has("json")) printJson({ workspaceId, existed, destroyed: true, stoppedExecutions: stopped });
  else if (!existed) printLines([`workspace ${workspaceId} did not exist${where}; nothing to do`]);
  else printLines([`${destroyedLine(record, where)}${stopped ? ` (${stopped} live execution(s) stopped first)` : ""}`]);
  return 0;
}

/** What rm did to a workspace's files, and what destroy keeps by design: an adopted directory, a worktree's branch. */
function destroyedLine(record: RecordFacts, where: string): string {
  const id = record.workspaceId;
  const root = record.root === null ? "" : ` ${record.root}`;
  switch (record.kind) {
    case "adopted":
      return `workspace ${id} removed${where}; its adopted directory${root} is left as it was`;
    case "worktree": {
      const branch = record.details?.branch ? `; branch ${record.details.branch} kept${record.details.repo ? ` in ${record.details.repo}` : ""}` : "";
      return `workspace ${id} destroyed${where}: its worktree${root} removed${branch}`;
    }
    case "copy":
    case "clone":
      return `workspace ${id} destroyed${where}: its ${record.kind}${root} removed`;
    default:
      return `workspace ${id} destroyed${where}`;
  }
}
