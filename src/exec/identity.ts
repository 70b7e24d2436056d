import { readProcess, type ProcessInfo } from "../platform/process.ts";

/** How long a freshly spawned workload may take to show up as its own session leader. */
const LEADER_TIMEOUT_MS = 1000;

/**
 * Confirms the spawned pid is our workload: started no earlier than the wrapper, and leader
 * of its own group and (unless `sessionLeader` is false: a sandboxed PTY workload, whose
 * session is bwrap's) of its own session. Returns its /proc facts, or `exited` with them when
 * it already finished (a zombie still has its start time).
 */
export async function confirmLeader(pid: number, notBefore: number, sessionLeader = true): Promise<{ info: ProcessInfo; exited: boolean }> {
  const deadline = performance.now() + LEADER_TIMEOUT_MS;
  for (;;) {
    const info = readProcess(pid);
    if (!info) throw new Error(`workload ${pid} vanished before its identity could be read`);
    if (info.startTicks < notBefore) throw new Error(`pid ${pid} started before this wrapper: not our workload`);
    if (info.state === "Z") return { info, exited: true };
    if (info.pgid === pid && (info.sid === pid || !sessionLeader)) return { info, exited: false };
    if (performance.now() > deadline) throw new Error(`workload ${pid} did not become a session leader within ${LEADER_TIMEOUT_MS} ms`);
    await Bun.sleep(1);
  }
}
