import { lazyFs } from "./platform/lazy.ts";
import { hasErrno, WOULD_BLOCK } from "./platform/errno.ts";
import { printable } from "./printable.ts";
import { redactCredentials } from "./redact.ts";

/**
 * Writes all of `text` to a descriptor with blocking writes. Never uses process.stdout:
 * that would make a descriptor shared with a workload non-blocking (see platform notes).
 */
export function writeAll(fd: number, text: string | Uint8Array): void {
  // TextEncoder, not Buffer.from: Buffer's first use costs ~0.25 ms in a process that had none.
  const bytes = typeof text === "string" ? new TextEncoder().encode(text) : text;
  const { writeSync } = lazyFs();
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      if (!hasErrno(error, WOULD_BLOCK)) throw error;
      Bun.sleepSync(1);
    }
  }
}

/** Protocol output: the only thing that ever goes to stdout for lifecycle operations. */
export function writeStdout(text: string): void {
  writeAll(1, text);
}

/** Set once the exec wrapper handed fd 2 to the workload: our stderr is then /dev/null. */
let stderrReleased = false;
/** Where diagnostics also go once the runtime log knows its home (src/log/runtime-log.ts). */
let diagnosticLog: ((message: string) => void) | undefined;

/**
 * One diagnostic on stderr, prefixed with the program name (see diagnosticText); also in the
 * runtime log when this process has one. After the wrapper released its stdio the
 * log is the only place it goes.
 */
export function diagnose(message: string): void {
  diagnoseOnStderr(message);
  diagnosticLog?.(message);
}

/** What every diagnostic line starts with: the program's name. */
const DIAGNOSTIC_PREFIX = "paseo-host-runtime: ";

/** stderr only: for what the runtime log already records in a structured line. */
export function diagnoseOnStderr(message: string): void {
  if (!stderrReleased) writeAll(2, `${DIAGNOSTIC_PREFIX}${diagnosticText(message)}\n`);
}

/** A line another run of this runtime wrote on stderr (a host's, a child's), without the program's name before its words. */
export function withoutProgramName(line: string): string {
  return line.startsWith(DIAGNOSTIC_PREFIX) ? line.slice(DIAGNOSTIC_PREFIX.length) : line;
}

/**
 * A diagnostic as a terminal shows it: URL credentials redacted, control characters escaped,
 * a newline too. One diagnostic is one line: a value quoted in it (an id, a path, git's stderr)
 * can neither forge a line of its own nor steer the terminal.
 */
function diagnosticText(message: string): string {
  return printable(redactCredentials(message));
}

/** fd 2 now belongs to the workload (it points at /dev/null here): stop writing to it. */
export function releaseStderr(): void {
  stderrReleased = true;
}

/** Installs (or removes) the runtime log's receiver of diagnostics. */
export function setDiagnosticLog(receiver: ((message: string) => void) | undefined): void {
  diagnosticLog = receiver;
}
