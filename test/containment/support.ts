/**
 * Containment test kit: workspaces in either containment mode, processes found by a unique
 * tag in their command line, wrappers killed the way a crash kills them, and strangers given
 * a chosen pid through /proc/sys/kernel/ns_last_pid (root only).
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readProcess } from "../../src/platform/process.ts";
import { Database } from "bun:sqlite";
import { request, runBinary, type RunResult } from "../../kit/binary.ts";
import { CGROUP_UNAVAILABLE } from "../../kit/cgroup.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec, type ExecHandle } from "../support/daemon.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { until } from "../support/poll.ts";
import { processesWith } from "../support/procs.ts";

export type Mode = "cgroup" | "process-group";

/** The modes this host can test (cgroup only with a usable cgroup v2 hierarchy). */
export const MODES: Mode[] = CGROUP_UNAVAILABLE ? ["process-group"] : ["cgroup", "process-group"];

/** A ready workspace whose every call runs under `mode`. */
export function workspaceIn(mode: Mode, prefix = "contain"): Promise<ReadyWorkspace> {
  return readyWorkspace(prefix, "seed", { containment: mode });
}

/** A unique number-looking word to put in a workload's argv (`sleep <tag>`). */
export function tag(): string {
  return `${600 + Math.floor(Math.random() * 100)}.${Date.now() % 100000}${Math.floor(Math.random() * 1000)}`;
}

/** Starts an exec of `argv` in `ws` like the daemon (pipes, fd 3 closed after the envelope). */
export function execIn(ws: ReadyWorkspace, argv: string[], fields: Record<string, unknown> = {}): { handle: ExecHandle; execId: string } {
  const env = envelope(argv, { options: ws.options, env: { PATH }, ...fields });
  const handle = startExec(ws.id, env);
  handle.closeStdin();
  return { handle, execId: env.execId as string };
}

/**
 * The execution's row, read-only and without migrating anything (so these tests also run
 * against an older binary, to show what they catch).
 */
export function recordOf(ws: ReadyWorkspace, execId: string): { pid: number; cgroup?: string | null; finished_at: number | null } | null {
  const db = new Database(join(ws.home, "state.sqlite"), { readonly: true });
  try {
    return db.query("SELECT * FROM executions WHERE workspace_id = ?1 AND exec_id = ?2").get(ws.id, execId) as never;
  } finally {
    db.close();
  }
}

/** Runs a lifecycle operation of the binary against `ws`, as the daemon does. */
export function lifecycle(ws: ReadyWorkspace, name: "pause" | "resume" | "destroy" | "inspect", options: Record<string, unknown> = {}): Promise<RunResult> {
  return runBinary([name, "--workspace-id", ws.id], { stdin: request({ ...ws.options, ...options }) });
}

/** `reconcile` keeping `ws` (so only its abandoned executions are at stake). */
export function reconcileKeeping(ws: ReadyWorkspace): Promise<RunResult> {
  return runBinary(["reconcile"], { stdin: request(ws.options, { workspaceIds: [ws.id] }) });
}

/** The daemon's cleanup path for one execution. */
export function signalOp(ws: ReadyWorkspace, execId: string, signal = "SIGKILL"): Promise<RunResult> {
  return runBinary(["signal", "--workspace-id", ws.id, "--exec-id", execId, "--signal", signal], { stdin: request(ws.options) });
}

/** Whether this process may steer pid allocation (root, and the file exists). */
export const CAN_STEER_PIDS = process.getuid?.() === 0 && existsSync("/proc/sys/kernel/ns_last_pid");

/**
 * A stranger that gets pid `pid`: `sh -c 'sleep T & sleep T & exit 0'` in its own session, so
 * once it exits its two children live on in group and session `pid`, led by nobody. Other
 * processes of the machine fork too, so steering is retried; null when it never landed.
 */
export async function strangerAt(pid: number, sleepTag: string, attempts = 300): Promise<{ children: number[] } | null> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (readProcess(pid) !== null) {
      await Bun.sleep(20); // still taken (a zombie not reaped yet, or someone else's)
      continue;
    }
    writeFileSync("/proc/sys/kernel/ns_last_pid", String(pid - 1));
    const proc = Bun.spawn(["/bin/sh", "-c", `sleep ${sleepTag} & sleep ${sleepTag} & exit 0`], { detached: true, stdio: ["ignore", "ignore", "ignore"] });
    await proc.exited;
    const children = await until("the stranger's children", () => {
      const found = processesWith(`sleep\0${sleepTag}`);
      return found.length === 2 ? found : null;
    });
    if (proc.pid === pid) return { children };
    for (const child of children) process.kill(child, "SIGKILL");
  }
  return null;
}
