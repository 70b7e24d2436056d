/**
 * An exec's launch made sandboxed (exec/prepare.ts, inside its transaction): the view the
 * workload sees, the egress under a network allowlist, and on Linux the init's script and
 * bwrap's descriptors. Loaded by a sandboxed exec only (prepare.ts sandboxParts). exec's
 * side of the sandbox: what the sandbox is (view, launch, init, egress) stays in src/sandbox/.
 */
import { filesToShow, type Launch, type SandboxView } from "../sandbox/view.ts";
import { seatbeltLaunch } from "../sandbox/seatbelt.ts";
import { bwrapDescriptors, SANDBOX_INIT_SOURCE, sandboxInitCommand, sandboxLaunch, sandboxRequest } from "../sandbox/launch.ts";
import { sandboxView } from "../sandbox/workspace-view.ts";
import type { PreparedGit } from "../sandbox/git/sandbox-git.ts";
import { userGitOf } from "../sandbox/git/private-git.ts";
import { isAllowlist } from "../sandbox/settings.ts";
import { EGRESS_SOCKET, planEgress } from "../sandbox/network/egress-plan.ts";
import { ProgramError } from "./program.ts";
import type { ResolvedLaunch, SandboxEgress, SpawnStdioArray } from "./plan.ts";
import type { RuntimeOptions } from "../options.ts";
import { closeDescriptor, identityOf, openDirectory } from "../platform/directory.ts";
import { duplicateDescriptor, memoryFile } from "../platform/libc/descriptors.ts";
import { isLinux } from "../platform/os.ts";
import type { WorkspaceRecord } from "../store/workspaces.ts";
import type { OpenRoot } from "../workspace/confinement.ts";
import { storageDir } from "../workspace/paths.ts";

/** What a sandboxed launch is made from: the launch, the tool, and the workspace it runs in (its record, proven root and cwd, the sandbox's git). */
export interface SandboxedAt {
  launch: ResolvedLaunch;
  tool: string;
  mode: "pipes" | "pty";
  home: string;
  record: WorkspaceRecord;
  root: OpenRoot;
  cwd: { path: string; fd: number };
  options: RuntimeOptions;
  git: PreparedGit | null;
  execId: string;
}

/**
 * The launch as spawned under the sandbox, and (Linux) what the sandbox init runs. The view
 * also shows the program's file and this binary (the init, and the engine of a JavaScript
 * helper) when the system directories do not already.
 */
export function sandboxed(at: SandboxedAt) {
  const { launch, tool, mode, home, record, root, cwd, options, git, execId } = at;
  const view = sandboxView(home, record, root, options, git, userGitOf(record, root.seen.gitdir));
  view.readOnly.push(...filesToShow(isLinux ? [process.execPath, ...launch.files()] : launch.files(), view));
  const egress = egressOf(options, home, record.workspaceId, execId);
  if (!isLinux) return { launch: seatbeltPlan(launch, view, tool, egress), sandbox: null, egress };
  if (egress) view.overlays = [...(view.overlays ?? []), { source: egress.plan.socketPath!, target: EGRESS_SOCKET, writable: true }];
  const spawned = sandboxLaunch(launch, view, tool, sandboxInitCommand());
  const request = sandboxRequest(launch, mode, view, cwd, egress !== null);
  const held: number[] = [];
  try {
    let bound = root.fd;
    if (view.root !== root.path) held.push((bound = openCheckout(view.root!, root)));
    const script = memoryFile("paseo-sandbox-init", SANDBOX_INIT_SOURCE);
    held.push(script);
    // Pipes: the daemon's fds 0-2 go to the init as duplicates (the spawn replaces 0-2 before it would copy them).
    const copies = mode === "pipes" ? [0, 1, 2].map(duplicateDescriptor) : null;
    held.push(...(copies ?? []));
    return { launch: spawned, sandbox: { request, stdio: bwrapDescriptors(bound, script, copies) as SpawnStdioArray, held, git: git?.ctx ?? null }, egress };
  } catch (error) {
    for (const fd of held) closeDescriptor(fd);
    throw error;
  }
}

/**
 * macOS: sandbox-exec in front of the workload. Under an allowlist the profile names the proxy's
 * port, which exists only once the proxy listens, so the launch is made then (`launchAt`, from
 * exec/launch.ts gateLaunch); until then the plan holds one whose profile allows no network at
 * all, so that nothing can spawn the workload with more than the allowlist.
 */
export function seatbeltPlan(launch: Launch, view: SandboxView, tool: string, egress: SandboxEgress | null): Launch {
  if (!egress) return seatbeltLaunch(launch, view, tool, null);
  egress.launchAt = (port) => seatbeltLaunch(launch, view, tool, port);
  return seatbeltLaunch(launch, { ...view, network: "none" }, tool, null);
}

/**
 * Under a network allowlist, where the execution's proxy will be (it starts at launch, before
 * the sandbox). Linux: a socket shown in the sandbox's own network namespace. macOS
 * (unverified here): a loopback port, the one destination its Seatbelt profile allows.
 */
function egressOf(options: RuntimeOptions, home: string, workspaceId: string, execId: string): SandboxEgress | null {
  if (!isAllowlist(options.network)) return null;
  return { plan: planEgress(storageDir(home, workspaceId), execId, options.network.allow), opened: null, launchAt: null };
}

/**
 * The owned checkout the root lies in, opened again (it was proven a moment ago, in this same
 * transaction) and compared with what was just seen, so bwrap binds exactly that directory.
 */
function openCheckout(path: string, root: OpenRoot): number {
  const fd = openDirectory(path);
  if (identityOf(fd) !== root.seen.checkout) {
    closeDescriptor(fd);
    throw new ProgramError(`the checkout ${path} changed while the sandbox was prepared; nothing was launched`, 1);
  }
  return fd;
}
