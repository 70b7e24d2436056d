import { accessSync, constants } from "node:fs";
import { NO_ACCESS, tolerating } from "../platform/errno.ts";
import { statOrNull } from "../platform/lookup.ts";
import { resolve } from "node:path";

/** Why nothing was launched; `code` is the status the wrapper exits with (stderr says the message). */
export class NotLaunched extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/** Why a program could not be launched; `code` follows the shell convention (127, 126), or 1 for a refusal of the runtime's. */
export class ProgramError extends NotLaunched {}

/** A protocol failure found before launch (a bad frame with the envelope): nothing ran, exit 1. */
export class PreLaunchProtocolError extends NotLaunched {
  constructor(message: string) {
    super(message, 1);
  }
}

/**
 * Finds the file to execute for argv[0] the way execvp would, but through the envelope's
 * own PATH only (Bun would otherwise fall back to a built-in PATH).
 */
export function resolveProgram(program: string, env: Record<string, string>, cwd: string): string {
  if (program === "") throw new ProgramError("argv[0] is empty", 127);
  if (program.includes("/")) return checkExecutable(resolve(cwd, program), program);
  const found = Bun.which(program, { PATH: env.PATH ?? "", cwd });
  if (!found) {
    const where = env.PATH ? `PATH=${env.PATH}` : "an env without PATH";
    throw new ProgramError(`program ${JSON.stringify(program)} not found (searched ${where})`, 127);
  }
  return found;
}

function checkExecutable(path: string, shown: string): string {
  const stat = statOrNull(path);
  if (stat === null) throw new ProgramError(`program ${JSON.stringify(shown)} not found`, 127);
  const executable = tolerating(NO_ACCESS, false, () => {
    accessSync(path, constants.X_OK);
    return true;
  });
  if (!executable) throw new ProgramError(`program ${JSON.stringify(shown)} is not executable`, 126);
  if (!stat.isFile()) throw new ProgramError(`program ${JSON.stringify(shown)} is not a regular file`, 126);
  return path;
}
