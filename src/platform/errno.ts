/**
 * Tolerated failures, named. Like tini with ESRCH, a call that may fail in one expected way
 * (the process is gone, the file is not there) catches exactly that errno and nothing else: any
 * other failure is a real problem and is thrown, never read as "gone".
 */

/** Whether `error` is a system call's failure with one of `codes` ("ENOENT", "ESRCH"…). */
function hasErrno(error: unknown, codes: readonly string[]): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === "string" && codes.includes(code);
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
