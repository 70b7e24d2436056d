/**
 * Who holds a workspace's lock (lock.ts): nobody, this process, another process that still
 * runs, or one that died holding it. Derived from the recorded identity on every read.
 */
import { isSameProcess, isSelf } from "../platform/process.ts";
import type { ProcessIdentity, WorkspaceRecord } from "../store/workspaces.ts";

/** The live process other than us holding the record's lock, or null when the lock is free or its holder died. */
export function liveHolder(record: WorkspaceRecord): ProcessIdentity | null {
  if (!record.lock || isSelf(record.lock)) return null;
  return isSameProcess(record.lock) ? record.lock : null;
}

/** True when the record's lock was left by a process that died holding it. */
export function isAbandoned(record: WorkspaceRecord): boolean {
  return record.lock !== null && !isSelf(record.lock) && !isSameProcess(record.lock);
}
