/**
 * What of the host a workspace's sandboxed workloads see besides the system directories: the
 * root, the operator's additions, and the workspace's own git directory in place of the user's.
 * Everything here comes from the workspace record, the options and the runtime's own files,
 * never from files a workload can write (a `.git` file naming some other directory must not
 * widen the sandbox).
 */
import { existsSync } from "node:fs";
import type { RuntimeOptions } from "../options.ts";
import { isLinux } from "../platform/os.ts";
import { placesInView, type Overlay, type SandboxView } from "./view.ts";
import type { WorkspaceRecord } from "../store/workspaces.ts";
import type { OpenRoot } from "../workspace/confinement.ts";
import { isInside } from "../workspace/paths.ts";
import { submodulePins, untrustedDotGit, workloadOverlays, type UserGit } from "./git/private-git.ts";
import type { PreparedGit } from "./git/sandbox-git.ts";

/**
 * The view for `record`, whose root was just proven to be `root`. What is bound from the
 * checked descriptor (`view.root`) is the owned checkout the root lies in (a project below
 * the repository's top still finds its `.git`, which git would not look for across a mount
 * point), else the root itself. `git`, for a checkout of the user's repository, puts the
 * workspace's private git dir over its `.git`; the user's git dirs are never writable. Throws
 * naming an option path that does not exist.
 */
export function sandboxView(home: string, record: WorkspaceRecord, root: OpenRoot, options: RuntimeOptions, git: PreparedGit | null, user: UserGit | null): SandboxView {
  const readWrite: string[] = [];
  const readOnly: string[] = [];
  const { checkout } = record.details;
  const owned = record.kind !== "adopted" && checkout !== undefined && (checkout === root.path || isInside(checkout, root.path));
  for (const [option, paths, into] of [
    ["sandboxReadWrite", options.sandboxReadWrite, readWrite],
    ["sandboxReadOnly", options.sandboxReadOnly, readOnly],
  ] as const) {
    for (const path of paths) {
      if (!existsSync(path)) throw new Error(`options.${option} names ${path}, which does not exist`);
      into.push(path);
    }
  }
  // The runtime's home (its store, every workspace's storage and private git dir) is never the workload's, whatever the options show.
  const view: SandboxView = { root: owned ? checkout : root.path, readWrite, readOnly, network: options.network, hidden: [home] };
  view.overlays = gitOverlays(record, view, git, user);
  return view;
}

/**
 * Linux: the private git dir (private-git.ts). macOS (unverified): Seatbelt cannot show one
 * path at another, so the user's git dirs are only denied writes (git inside can read, not
 * commit). A `.git` file not taken on trust is shown as an empty file.
 */
function gitOverlays(record: WorkspaceRecord, view: SandboxView, git: PreparedGit | null, user: UserGit | null): Overlay[] {
  if (git?.ctx) return workloadOverlays(git.ctx.user, git.ctx.paths, (dir) => placesInView(dir, view), git.submodules);
  if (user && !isLinux) return [...new Set([user.commonDir, user.gitDir])].map((dir) => ({ source: dir, target: dir, writable: false }));
  const dotGit = untrustedDotGit(record);
  const pins = git ? submodulePins(git.top, git.submodules) : [];
  return dotGit === null ? pins : [...pins, { source: "/dev/null", target: dotGit, writable: false }];
}
