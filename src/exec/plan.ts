/**
 * The launch plan: everything validated before launch, handed from prepare.ts to the modes, the
 * launcher (launch.ts) and the record's gateway (record.ts). Its own module so that none of
 * them imports prepare.ts.
 */
import { closeDescriptor, leaveSpawnDirectory } from "../platform/directory.ts";
import type { SpawnEnvelope } from "../protocol/index.ts";
import type { Store } from "../store/db.ts";
import type { CgroupScope, Origin } from "../containment/cgroup-scope.ts";
import type { SandboxRequest } from "../sandbox/init-protocol.ts";
import type { GitSyncContext } from "../sandbox/git/sync-state.ts";
import type { Egress } from "../sandbox/network/egress.ts";
import type { EgressPlan } from "../sandbox/network/egress-plan.ts";
import type { Launch } from "../sandbox/view.ts";

/** A descriptor the spawn hands to the child at its index (Bun.spawn's stdio array). */
type SpawnStdio = "inherit" | "ignore" | "pipe" | number;
/** Bun.spawn's stdio array: fds 0–2, then any further descriptors. */
export type SpawnStdioArray = [SpawnStdio, SpawnStdio, SpawnStdio, ...SpawnStdio[]];

/** A launch, and the files it needs: asked for only under the sandbox, which shows them. */
export type ResolvedLaunch = Launch & { files: () => string[] };

/** Under a network allowlist: where its proxy will be, and once launched the open proxy (closed when the workload ended). */
export interface SandboxEgress {
  plan: EgressPlan;
  opened: Egress | null;
  /**
   * macOS: the launch itself, made once the proxy listens, since sandbox-exec's profile names
   * the proxy's port (the plan's program, argv and env are not used then). Null on Linux.
   */
  launchAt: ((port: number) => Launch) | null;
}

/** Everything validated before launch: nothing here has started a process. */
export interface LaunchPlan {
  workspaceId: string;
  execId: string;
  envelope: SpawnEnvelope;
  store: Store;
  /** The workspace root as recorded, and a descriptor of it proven to be the workspace's own. */
  root: { path: string; fd: number };
  /**
   * The workload's working directory: its path (messages, program lookup) and a descriptor of
   * exactly the directory that was checked, reached from `root.fd` without any symlink. The
   * spawn starts the workload in `cwdFd` (spawnDirectory), never by walking `cwd` again.
   * May be `root.fd` itself. Both are closed by releaseDirectories once the spawn returned.
   */
  cwd: string;
  cwdFd: number;
  /** File to execute; argv[0] is passed to the workload unchanged. */
  program: string;
  /** The argv the workload gets (the envelope's, unless a JavaScript helper needs the embedded engine). */
  argv: string[];
  env: Record<string, string>;
  /**
   * Under the Linux sandbox: program, argv and env above are bwrap's (src/sandbox/launch.ts),
   * the workload itself is what the sandbox init is asked to run, and the spawn hands over the
   * descriptors in `stdio` (numbers as SANDBOX_FDS says). Null otherwise (macOS's sandbox-exec
   * is only a different program and argv). `git`: the workspace's private git dir, whose
   * changes reach the user's repository once the sandbox ended, before `eof` and `exit`.
   */
  sandbox: { request: SandboxRequest; stdio: SpawnStdioArray; held: number[]; git: GitSyncContext | null } | null;
  /** Under a network allowlist (both platforms): the execution's way out. */
  egress: SandboxEgress | null;
  /** Start time of this wrapper: the workload cannot be older. */
  wrapperStartTicks: number;
  /** The execution's own cgroup (made, recorded, empty), or null under process-group containment. */
  cgroup: CgroupScope | null;
  /** This wrapper's own cgroup, to come back to after the spawn, and the migration primed for it. */
  origin: Origin | null;
}

/** Closes the plan's directory descriptors (and the sandbox's copies of fds 0–2): call once the spawn returned (or failed). */
export function releaseDirectories(plan: LaunchPlan): void {
  leaveSpawnDirectory();
  if (plan.cwdFd !== plan.root.fd) closeDescriptor(plan.cwdFd);
  closeDescriptor(plan.root.fd);
  for (const fd of plan.sandbox?.held ?? []) closeDescriptor(fd);
}
