/**
 * Containment as the tests exercise it: the containment and isolation modes this host can
 * test, workspaces in either containment mode, execs tagged so their processes are found by
 * command line, and strangers given a chosen pid through /proc/sys/kernel/ns_last_pid (root
 * only).
 */
import { existsSync, writeFileSync } from "node:fs";
import { readProcess } from "../../src/platform/process.ts";
import { CGROUP_UNAVAILABLE } from "../../kit/cgroup.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { readyWorkspace, type ReadyWorkspace } from "../../kit/workspace.ts";
import { startExec, type ExecHandle } from "./daemon.ts";
import { until } from "./poll.ts";
import { processesWith } from "./procs.ts";
import { withoutCgroups } from "./platform.ts";
import { missingTools } from "./tools.ts";

export type Mode = "cgroup" | "process-group";

/** Both containment modes: a suite that holds under each runs a block per mode, skipping what cannotContain says. */
export const ALL_MODES: Mode[] = ["cgroup", "process-group"];

/** True when this host cannot test `mode` (cgroup without a usable cgroup v2 hierarchy), after saying so. */
export function cannotContain(mode: Mode, what: string): boolean {
  return mode === "cgroup" && withoutCgroups(`${what}, containment "cgroup"`);
}

/** The modes this host can test, for a hook or a test that covers every mode at once. */
export const MODES: Mode[] = CGROUP_UNAVAILABLE ? ["process-group"] : ALL_MODES;

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

/** Both isolations: a suite that holds under each runs a block per isolation, skipping what cannotIsolate says. */
export const ISOLATIONS = ["none", "sandbox"] as const;

/** True when this host cannot test `isolation` ("sandbox" without bwrap), after saying so. */
export function cannotIsolate(isolation: (typeof ISOLATIONS)[number], what: string): boolean {
  return isolation === "sandbox" && missingTools(`${what}, isolation "sandbox"`, ["bwrap"]).length > 0;
}
