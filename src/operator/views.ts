/**
 * What `ls --json` and `ps --json` print for one runtime home, as schemas: the local commands
 * build these rows, and a remote runtime's views read them back from each host's own binary
 * (remote-hosts.ts), where they are other people's bytes: every field is checked here, and
 * printed through printable.ts like a local one. Objects, not strict ones: a host of a later
 * patch version may add fields, which are left out.
 */
import * as v from "valibot";
import { sandboxSettings } from "../sandbox/settings.ts";

const text = v.string();
const count = v.pipe(v.number(), v.integer(), v.minValue(0));
const pid = v.pipe(v.number(), v.integer(), v.minValue(1));

/** A workspace as `ls` shows it. */
export const WorkspaceSummary = v.object({
  workspaceId: text,
  owner: text,
  /** The protocol dialect it was created in; only requests in it reach it. */
  dialect: v.picklist(["seed", "later"]),
  /** The later dialect's runtimeInstanceId of the daemon that made it, or null. */
  runtimeInstanceId: v.nullable(text),
  /** Fingerprint of the daemon configuration whose reconcile may remove it (null: made before schema v2, not listed since). */
  configuration: v.nullable(text),
  /** creating | ready | paused | destroying. */
  status: v.picklist(["creating", "ready", "paused", "destroying"]),
  /** For creating/destroying rows: whether the process doing that work is gone (the next operation takes over). */
  interrupted: v.boolean(),
  /** For a destroying row: what inspect answers as `error` (why the destroy has not finished, what to do). */
  unfinishedDestroy: v.nullable(text),
  /** When its configuration last listed it (its create, or a reconcile listing it). */
  listedAt: text,
  /** When another configuration of its owner took over its configuration and left it unlisted (an orphan), else null. */
  orphanedAt: v.nullable(text),
  /** host-directory | directory | git (where the files came from). */
  source: text,
  /** existing | branch | checkout | resolved-worktree (as asked for in create). */
  placement: text,
  /** adopted | copy | clone | worktree (what the runtime made), null until created. */
  kind: v.nullable(text),
  root: v.nullable(text),
  /** Why a ready or paused root cannot be used, or null. */
  problem: v.nullable(text),
  liveExecutions: count,
  /** The workspace's cgroup (cgroup containment), and what it uses now when its controllers are enabled. */
  cgroup: v.nullable(text),
  memoryCurrent: v.nullable(count),
  pidsCurrent: v.nullable(count),
  createdAt: text,
  /** The isolation it keeps (sandbox/isolation.ts); null: made before schema 3, recorded by its next resume or exec. */
  isolation: v.nullable(sandboxSettings()),
  /** Why the last sync of its sandbox's git into the user's repository failed (retried before the next exec and at destroy); absent from hosts of before it was kept. */
  gitSyncProblem: v.optional(v.nullable(text)),
});
export type WorkspaceSummary = v.InferOutput<typeof WorkspaceSummary>;

/** `ls --json`: the home and its workspaces. */
export const WorkspaceList = v.object({ home: text, workspaces: v.array(WorkspaceSummary) });

/** One host an execution under an allowlist reached: its connections ended so far and their bytes (in: from the host). */
export const EgressHost = v.object({ host: text, connections: count, bytesIn: count, bytesOut: count });

/** An execution's way out under a network allowlist (sandbox/network/egress.ts): refusals by the policy, upstreams that could not be reached, and the hosts reached. */
export const EgressCounts = v.object({ denied: count, failed: count, hosts: v.array(EgressHost) });
export type EgressCounts = v.InferOutput<typeof EgressCounts>;

/** A live execution as `ps` shows it. Never its environment: that may hold secrets. */
export const ExecutionDetails = v.object({
  workspaceId: text,
  execId: text,
  /** The workload's pid (its group and session leader); null while the wrapper is launching it. */
  pid: v.nullable(pid),
  wrapperPid: pid,
  mode: v.picklist(["pipes", "pty"]),
  purpose: text,
  argv0: text,
  /** "running", or "starting" while the wrapper has claimed the identity but not launched yet. */
  state: v.picklist(["running", "starting"]),
  startedAt: text,
  /** Live processes of the execution: in its cgroup, or proven members of its group and session. */
  processes: count,
  /** The execution's cgroup (cgroup containment), and its pids.current when that controller is enabled. */
  cgroup: v.nullable(text),
  pidsCurrent: v.nullable(count),
  /** The leader's exact argv (Linux), or null (starting, gone, or a platform that gives only text). */
  argv: v.nullable(v.array(text)),
  /** The command line, shell-quoted when the argv is exact. */
  command: text,
  /** The memory of the workload's processes (or its cgroup's memory.current), bytes. */
  memoryBytes: v.nullable(count),
  /** Where memoryBytes comes from: "cgroup", "pss" (proportional set sizes, summed) or "rss" (resident sizes summed: an upper bound). */
  memorySource: v.nullable(v.picklist(["pss", "rss", "cgroup"])),
  /** Under a network allowlist: what its way out counted so far; null otherwise. Absent from hosts of before it was counted. */
  network: v.optional(v.nullable(EgressCounts)),
});
export type ExecutionDetails = v.InferOutput<typeof ExecutionDetails>;

/** `ps --json`: the home and its live executions. */
export const ExecutionList = v.object({ home: text, executions: v.array(ExecutionDetails) });
