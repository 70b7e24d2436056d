import type { ProcessInfo } from "../platform/process.ts";

/**
 * Checks a freshly spawned process is our workload: started no earlier than the wrapper, and
 * leader of its own group and (unless `sessionLeader` is false: a sandboxed PTY workload, whose
 * session is bwrap's) of its own session. Bun.spawn returns once the child has exec'd, so both
 * are settled by then; a zombie that already finished still has its start time. Read before
 * the wrapper yields to its event loop, so the child cannot have been reaped yet (in the
 * sandbox: while the sandbox init waits to be told the identity is recorded).
 */
export function checkLeader(info: ProcessInfo | null, pid: number, notBefore: number, sessionLeader = true): ProcessInfo {
  if (!info) throw new Error(`workload ${pid} vanished before its identity could be read`);
  if (info.startTicks < notBefore) throw new Error(`pid ${pid} started before this wrapper: not our workload`);
  const leads = info.pgid === pid && (info.sid === pid || !sessionLeader);
  if (info.state !== "Z" && !leads) throw new Error(`workload ${pid} is not the leader of its own ${sessionLeader ? "session" : "group"} (pgid ${info.pgid}, sid ${info.sid})`);
  return info;
}
