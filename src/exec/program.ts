import { accessSync, constants, type Stats } from "node:fs";
import { errnoOf, hasErrno, NO_ACCESS, PATH_UNRESOLVABLE, tolerating } from "../platform/errno.ts";
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

/**
 * stat(2) of a program's path: null when it is missing (the shell's 127); a path that cannot be
 * reached refuses the launch as execvp would (126), so a caller trying the next place goes on.
 */
export function statProgram(path: string, shown: string): Stats | null {
  try {
    return statOrNull(path);
  } catch (error) {
    // What statOrNull did not take for missing: a loop of links, a directory it may not search.
    if (!hasErrno(error, PATH_UNRESOLVABLE)) throw error;
    throw new ProgramError(`program ${JSON.stringify(shown)} cannot be reached (${errnoOf(error)})`, 126);
  }
}

function checkExecutable(path: string, shown: string): string {
  const stat = statProgram(path, shown);
  if (stat === null) throw new ProgramError(`program ${JSON.stringify(shown)} not found`, 127);
  const executable = tolerating(NO_ACCESS, false, () => {
    accessSync(path, constants.X_OK);
    return true;
  });
  if (!executable) throw new ProgramError(`program ${JSON.stringify(shown)} is not executable`, 126);
  if (!stat.isFile()) throw new ProgramError(`program ${JSON.stringify(shown)} is not a regular file`, 126);
  return path;
}
