import type { ProcessInfo } from "../platform/process.ts";

/**
 * Checks a freshly spawned process is our workload: started no earlier than the wrapper, and
 * leader of its own group and session (Bun.spawn returns once the child has exec'd, so both
 * are settled by then; a zombie that already finished still has its start time). Read before
 * the wrapper yields to its event loop, so the child cannot have been reaped yet.
 */
export function checkLeader(info: ProcessInfo | null, pid: number, notBefore: number): ProcessInfo {
  if (!info) throw new Error(`workload ${pid} vanished before its identity could be read`);
  if (info.startTicks < notBefore) throw new Error(`pid ${pid} started before this wrapper: not our workload`);
  if (info.state !== "Z" && (info.pgid !== pid || info.sid !== pid)) throw new Error(`workload ${pid} is not the leader of its own session (pgid ${info.pgid}, sid ${info.sid})`);
  return info;
}
