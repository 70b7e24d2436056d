/**
 * What of the host a workspace's sandboxed workloads see besides the system directories: the
 * root, the git directories its checkout needs, and the operator's additions. Everything here
 * comes from the workspace record and the options, never from files a workload can write (a
 * `.git` file naming some other directory must not widen the sandbox).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { RuntimeOptions } from "../options.ts";
import type { SandboxView } from "../platform/sandbox.ts";
import type { WorkspaceRecord } from "../store/workspaces.ts";
import type { OpenRoot } from "./confinement.ts";
import { isInside } from "./paths.ts";

/**
 * In a worktree's common git directory, what would run code in the user's own git commands
 * (hooks, config with its aliases, fsmonitor and filters, submodules' git dirs): read-only.
 */
const COMMON_DIR_READ_ONLY = ["config", "config.worktree", "hooks", "modules"];

/**
 * The view for `record`, whose root was just proven to be `root`. What is bound from the
 * checked descriptor (`view.root`) is the owned checkout the root lies in (a project below
 * the repository's top still finds its `.git`, which git would not look for across a mount
 * point), else the root itself. Throws naming an option path that does not exist.
 */
export function sandboxView(record: WorkspaceRecord, root: OpenRoot, options: RuntimeOptions): SandboxView {
  const readWrite: string[] = [];
  const readOnly: string[] = [];
  const { checkout, commonDir } = record.details;
  const owned = record.kind !== "adopted" && checkout !== undefined && (checkout === root.path || isInside(checkout, root.path));
  if (record.kind === "worktree" && owned && commonDir) {
    // git commits in a worktree write objects and refs into the repository's common dir.
    readWrite.push(commonDir);
    for (const name of COMMON_DIR_READ_ONLY) if (existsSync(join(commonDir, name))) readOnly.push(join(commonDir, name));
  }
  for (const [option, paths, into] of [
    ["sandboxReadWrite", options.sandboxReadWrite, readWrite],
    ["sandboxReadOnly", options.sandboxReadOnly, readOnly],
  ] as const) {
    for (const path of paths) {
      if (!existsSync(path)) throw new Error(`options.${option} names ${path}, which does not exist`);
      into.push(path);
    }
  }
  return { root: owned ? checkout : root.path, readWrite, readOnly, network: options.network };
}
