/**
 * PTY execs as the daemon runs them: PTY envelopes, finding the workload a wrapper launched and
 * its session, and making sure every process a test started is gone afterwards.
 */
import { listProcesses, type ProcessInfo } from "../../src/platform/process.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec, type ExecHandle, type ExecOptions } from "./daemon.ts";
import type { ReadyWorkspace } from "../../kit/workspace.ts";
import { until } from "./poll.ts";
import { MARK, isMarked, killMarked } from "./procs.ts";

/** A PTY spawn envelope with the daemon's defaults: 24 rows, 80 columns, PATH and the mark. */
export function ptyEnvelope(ws: ReadyWorkspace, argv: string[], fields: Record<string, unknown> = {}): Record<string, unknown> {
  return envelope(argv, {
    options: ws.options,
    env: { PATH, ...MARK },
    stdio: { kind: "pty", rows: 24, cols: 80 },
    ...fields,
  });
}

const handles = new Set<ExecHandle>();

/**
 * Starts a PTY exec like the daemon: fd 3 stays open unless `keepControls: false`, and on the
 * `exit` event fd 0 and fd 3 are closed, as the daemon does.
 */
export function startPty(ws: ReadyWorkspace, argv: string[], fields: Record<string, unknown> = {}, options: ExecOptions = {}): ExecHandle {
  const handle = startExec(ws.id, ptyEnvelope(ws, argv, fields), { keepControls: true, ...options });
  void handle.waitEvent("exit").then(() => {
    handle.closeStdin();
    handle.closeControls();
  });
  handles.add(handle);
  void handle.done.then(() => handles.delete(handle));
  return handle;
}

/**
 * The workload the wrapper launched: the marked process below the wrapper whose parent is not
 * marked. That is the wrapper's own child without the sandbox, and the process below bwrap
 * and the sandbox init with it (they run with an env of their own, never the workload's).
 */
export function workloadOf(handle: ExecHandle): Promise<ProcessInfo> {
  return until(`the workload of wrapper ${handle.pid}`, () => {
    const processes = listProcesses();
    const byPid = new Map(processes.map((p) => [p.pid, p]));
    const below = (p: ProcessInfo) => {
      for (let up = byPid.get(p.ppid), depth = 0; up && depth < 8; up = byPid.get(up.ppid), depth++) if (up.pid === handle.pid) return true;
      return p.ppid === handle.pid;
    };
    return processes.find((p) => p.state !== "Z" && isMarked(p.pid) && !isMarked(p.ppid) && below(p));
  });
}

/**
 * Live processes in the workload's session or process group. Without the sandbox the leader
 * leads its session; in the sandbox the session is bwrap's (which holds the terminal), so only
 * the workload's own processes (marked) of that session count.
 */
export function sessionMembers(leader: ProcessInfo): ProcessInfo[] {
  const own = leader.sid === leader.pid;
  return listProcesses().filter((p) => p.state !== "Z" && (p.sid === leader.sid || p.pgid === leader.pgid) && (own || isMarked(p.pid)));
}

/**
 * After each test: SIGKILL every wrapper still running and every marked process.
 * Returns what had to be killed so a test can also assert there was nothing.
 */
export async function killLeftovers(): Promise<number> {
  let killed = 0;
  const exits: Promise<unknown>[] = [];
  for (const handle of handles) {
    if (handle.child.exitCode === null && handle.child.signalCode === null) {
      exits.push(new Promise((resolve) => handle.child.once("exit", resolve)));
      handle.child.kill("SIGKILL");
      killed++;
    }
  }
  killed += killMarked();
  await Promise.race([Promise.all(exits), Bun.sleep(2000)]);
  handles.clear();
  return killed;
}
