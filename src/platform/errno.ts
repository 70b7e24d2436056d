/**
 * Tolerated failures, named. Like tini with ESRCH, a call that may fail in one expected way
 * (the process is gone, the file is not there) catches exactly that errno and nothing else: any
 * other failure is a real problem and is thrown, never read as "gone". Every check of a
 * failure's errno goes through here.
 */

/** The errno name a system call's failure carries ("ENOENT", "ESRCH"…); undefined for any other error. */
export function errnoOf(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** Whether `error` is a system call's failure with one of `codes` ("ENOENT", "ESRCH"…). */
export function hasErrno(error: unknown, codes: readonly string[]): boolean {
  const code = errnoOf(error);
  return code !== undefined && codes.includes(code);
}

/** `fn()`, or `fallback` when it fails with one of `codes`; any other failure is thrown. */
export function tolerating<T, F>(codes: readonly string[], fallback: F, fn: () => T): T | F {
  try {
    return fn();
  } catch (error) {
    if (hasErrno(error, codes)) return fallback;
    throw error;
  }
}

/** What a read of /proc/PID/… fails with once PID is gone: no such entry, or the process exited mid-read. */
export const PROCESS_GONE = ["ENOENT", "ESRCH"] as const;
/** What a cgroup's directory or file fails with once the cgroup was removed: ENOENT, or ENODEV when it went while its file was open. */
export const CGROUP_GONE = ["ENOENT", "ENODEV"] as const;
/** A path that is not there: it is missing, or a directory on the way is a file. */
export const PATH_MISSING = ["ENOENT", "ENOTDIR"] as const;
/** A path that leads nowhere this process can follow: PATH_MISSING, a loop of links, or a directory on the way it may not search. */
export const PATH_UNRESOLVABLE = [...PATH_MISSING, "ELOOP", "EACCES"] as const;
/** A write to a peer that closed its end: EPIPE, or ECONNRESET when it left data unread. */
export const PEER_GONE = ["EPIPE", "ECONNRESET"] as const;
/** An `error` listener for a stream whose peer may leave first (PEER_GONE: its exit says why); any other failure is thrown. */
export function unlessPeerGone(error: unknown): void {
  if (!hasErrno(error, PEER_GONE)) throw error;
}
/** A descriptor someone else made non-blocking has no data or no room right now: wait, then retry. */
export const WOULD_BLOCK = ["EAGAIN"] as const;
/** A descriptor that is not open (or never was): EBADF. */
export const FD_NOT_OPEN = ["EBADF"] as const;
/** What access(2) answers when this user may not: EACCES, or EROFS for a write on a read-only filesystem. */
export const NO_ACCESS = ["EACCES", "EROFS"] as const;
/** A /proc/PID file of a process that is gone, or of another user's that we may not read (ptrace access, hidepid). */
export const PROCESS_UNREADABLE = [...PROCESS_GONE, "EACCES"] as const;
/** A terminal whose other side went away: tcflow and reads of its slave fail with EIO. */
export const TERMINAL_HUNG_UP = ["EIO"] as const;
/** bun:ffi could not load a shared library (its error's code: Bun's, not an errno). */
export const LIBRARY_MISSING = ["ERR_DLOPEN_FAILED"] as const;
