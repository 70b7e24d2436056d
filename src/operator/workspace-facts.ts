/**
 * What an operator command knows of one workspace before it acts on it, wherever it lives: the
 * store's record and live executions here, or for a remote runtime what the workspace's host
 * (its placement, else its hash host: where the runtime's operations go) reports of it.
 */
import type { Invocation } from "../argv.ts";
import { readOptions } from "../options.ts";
import type { Database } from "bun:sqlite";
import { withExistingStore } from "../store/db.ts";
import { getWorkspace, listWorkspaces, type WorkspaceRecord } from "../store/workspaces.ts";
import { operatorOptions, recordedWorkspace } from "./common.ts";
import { liveExecutions } from "./ps.ts";
import { locate, remoteRuntime } from "./remote-hosts.ts";
import { selection } from "./selection.ts";
import type { WorkspaceSummary } from "./views.ts";

/** The part of a workspace's record operator commands act on, and what they tell of it (a remote host's `ls` knows no branch). */
export type RecordFacts = Pick<WorkspaceRecord, "workspaceId" | "owner" | "dialect" | "instanceId" | "status" | "isolation" | "kind" | "root"> & {
  details?: Pick<WorkspaceRecord["details"], "branch" | "repo">;
};

export interface WorkspaceFacts {
  record: RecordFacts | null;
  /** Its live executions (any owner's workspace). */
  liveExecIds: string[];
  /** The owner this runtime stamps (on its hosts, for a remote one). */
  owner: string;
  /** The host it lives on (its key), for a remote runtime; null here. */
  host: string | null;
}

/** Where a workspace lives, for a message: "" here, ` on <host>` for a remote runtime's. */
export function onHost(host: string | null): string {
  return host === null ? "" : ` on ${host}`;
}

/** A host's `ls` row as the record facts. */
export function factsOf(summary: WorkspaceSummary): RecordFacts {
  const { workspaceId, owner, dialect, runtimeInstanceId, status, isolation, root } = summary;
  return { workspaceId, owner, dialect, instanceId: runtimeInstanceId, status, isolation, kind: summary.kind as RecordFacts["kind"], root };
}

/** The exec ids of a workspace's live executions in the store `db`. */
export function liveExecIds(db: Database, workspaceId: string): string[] {
  return liveExecutions(db, workspaceId).map((execution) => execution.execId);
}

/** The facts of `workspaceId` for the runtime `invocation` selects. Throws when its host cannot tell (nothing was changed). */
export async function workspaceFacts(invocation: Invocation, workspaceId: string): Promise<WorkspaceFacts> {
  const chosen = selection(invocation);
  if (chosen.remote === null) {
    const options = operatorOptions(invocation);
    const owner = readOptions(options).owner;
    // One open of the store for both answers; a home without one has neither.
    const here = (db: Database | null): WorkspaceFacts => ({
      record: db && getWorkspace(db, workspaceId),
      liveExecIds: db ? liveExecIds(db, workspaceId) : [],
      owner,
      host: null,
    });
    return withExistingStore(options, ({ db }) => here(db), () => here(null));
  }
  const runtime = await remoteRuntime(chosen);
  const found = await locate(runtime, workspaceId);
  if (found.problem !== null) throw new Error(`${invocation.command}: cannot see workspace ${JSON.stringify(workspaceId)} on ${found.url}: ${found.problem}; nothing was changed`);
  return { record: found.record && factsOf(found.record), liveExecIds: found.liveExecIds, owner: runtime.owner, host: found.host.key };
}

/**
 * The ids of the owner's workspaces where `workspaceId` would live (its host, for a remote
 * runtime), for "did you mean" when there is none by that id; none when that cannot be told.
 */
export async function ownerWorkspaceIds(invocation: Invocation, workspaceId: string): Promise<string[]> {
  const chosen = selection(invocation);
  if (chosen.remote === null) {
    const options = operatorOptions(invocation);
    const owner = readOptions(options).owner;
    return withExistingStore(options, ({ db }) => listWorkspaces(db, owner).map((record) => record.workspaceId), () => []);
  }
  return (await locate(await remoteRuntime(chosen), workspaceId)).ownerIds;
}

/**
 * The record `run` confines an exec by (common.ts withRecordedIsolation), or null. A remote host
 * that cannot tell leaves it to the exec, which reports the host's failure itself.
 */
export async function recordForRun(invocation: Invocation, workspaceId: string): Promise<RecordFacts | null> {
  const chosen = selection(invocation);
  if (chosen.remote === null) return recordedWorkspace(operatorOptions(invocation), workspaceId);
  const found = await locate(await remoteRuntime(chosen), workspaceId);
  return found.record && factsOf(found.record);
}
