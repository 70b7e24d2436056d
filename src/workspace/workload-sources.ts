/**
 * A create's host directory that a sandboxed workload writes. The runtime's own host git runs
 * in whatever repository it finds at a create's source (`git worktree add`, a clone), and a
 * `.git` the workload made there (its hooks, its core.fsmonitor) would run on the host: the
 * property of issue 22 (docs/design/sandbox.md). Such a source is refused, except where the
 * runtime holds the `.git` itself: the root of an adopted checkout whose git dirs it recorded
 * (a private git dir is shown over it), and a worktree's checkout (its `.git` is a file of the
 * user's, read-only inside).
 */
import { realpathSync } from "node:fs";
import type { Database } from "bun:sqlite";
import { tolerating } from "../platform/errno.ts";
import { listWorkspaces, type WorkspaceRecord } from "../store/workspaces.ts";
import { isInside } from "./paths.ts";

/** Why `source` (a real path) may not be a create's source, or null. A repeated create of `workspaceId` is its own. */
export function workloadWrittenSource(db: Database, source: string, workspaceId: string): string | null {
  for (const record of listWorkspaces(db)) {
    if (record.isolation?.isolation !== "sandbox" || record.workspaceId === workspaceId) continue;
    for (const { dir, heldGit } of writableDirectories(record)) {
      const real = realOrNull(dir);
      if (real === null || !(isInside(real, source) || (real === source && !heldGit))) continue;
      return `input.project.source.path ${source} is inside ${real}, which the sandboxed workload of workspace ${JSON.stringify(record.workspaceId)} writes, a .git included: this runtime's git would run that workload's; create from the repository itself, or destroy that workspace first`;
    }
  }
  return null;
}

/** What a sandboxed workspace's workloads write, and whether the `.git` at its top is the runtime's to hold. */
function writableDirectories(record: WorkspaceRecord): { dir: string; heldGit: boolean }[] {
  const extra = record.isolation?.isolation === "sandbox" ? record.isolation.sandboxReadWrite.map((dir) => ({ dir, heldGit: false })) : [];
  const { checkout, git } = record.details;
  if (record.kind === "adopted" && record.root !== null) return [{ dir: record.root, heldGit: git !== null }, ...extra];
  if (checkout !== undefined) return [{ dir: checkout, heldGit: record.kind === "worktree" }, ...extra];
  return extra;
}

/** Its real path; null when it is gone (a destroyed checkout, a removed option path). */
function realOrNull(path: string): string | null {
  return tolerating(["ENOENT", "ENOTDIR"], null, () => realpathSync(path));
}
