/** The gate in front of every exec: is this workspace usable right now, and where is it? */
import type { Database } from "bun:sqlite";
import { statSync } from "node:fs";
import { getWorkspace } from "../store/workspaces.ts";
import { assertOwner, type Ownership } from "./owner.ts";

/** Why a root cannot be used, or null when it is a directory. One stat, no git. */
export function rootProblem(root: string | null): string | null {
  if (root === null) return "has no root recorded";
  try {
    if (!statSync(root).isDirectory()) return `root ${root} is not a directory`;
    return null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return `root ${root} no longer exists (removed outside paseo-host-runtime; destroy and create the workspace again)`;
    return `root ${root} cannot be examined: ${(error as Error).message}`;
  }
}

/**
 * Throws unless the workspace exists, belongs to `owner` (owner, dialect, instance), is ready
 * and its root is a directory.
 * Cheap: one primary-key lookup and one stat.
 */
export function requireReadyWorkspace(db: Database, workspaceId: string, owner: Ownership): { root: string } {
  const name = JSON.stringify(workspaceId);
  const record = getWorkspace(db, workspaceId);
  if (!record) throw new Error(`workspace ${name} does not exist`);
  assertOwner(record, owner);
  if (record.status === "creating" || record.status === "destroying") throw new Error(`workspace ${name} does not exist`);
  if (record.status === "paused") throw new Error(`workspace ${name} is paused`);
  const problem = rootProblem(record.root);
  if (problem) throw new Error(`workspace ${name} is not usable: ${problem}`);
  return { root: record.root! };
}

/**
 * Runs `fn` inside a write transaction (BEGIN IMMEDIATE) after re-checking that the workspace
 * is ready. Record an execution inside `fn`: pause flips the status in its own immediate
 * transaction before listing executions to stop, so a launch either is seen and stopped by
 * pause, or sees "paused" here and must not go on.
 */
export function whileReady<T>(db: Database, workspaceId: string, owner: Ownership, fn: (root: string) => T): T {
  return db.transaction(() => fn(requireReadyWorkspace(db, workspaceId, owner).root)).immediate();
}
