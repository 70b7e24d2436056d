import { accessSync, constants, existsSync, lstatSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { hasErrno, NO_ACCESS, PATH_MISSING, PATH_UNRESOLVABLE, tolerating } from "../platform/errno.ts";
import { lazyOs } from "../platform/lazy.ts";
import { isMacOS } from "../platform/os.ts";
import { withoutProgramName } from "../output.ts";

/** The options that select a runtime home (options.ts has validated them). */
export interface HomeOptions {
  stateDirectory?: string | undefined;
}

/** The runtime home: where the store and every owned workspace live. */
export function resolveHome(options: HomeOptions, env = process.env): string {
  if (options.stateDirectory !== undefined) return options.stateDirectory;
  if (env.PASEO_HOST_RUNTIME_HOME) return requireAbsolute(env.PASEO_HOST_RUNTIME_HOME, "PASEO_HOST_RUNTIME_HOME");
  return defaultHome(env);
}

/** The home in the user's own state directory: what an unset stateDirectory and PASEO_HOST_RUNTIME_HOME mean. */
export function defaultHome(env = process.env): string {
  if (env.XDG_STATE_HOME) return join(requireAbsolute(env.XDG_STATE_HOME, "XDG_STATE_HOME"), "paseo-host-runtime");
  const home = env.HOME || lazyOs().homedir();
  if (isMacOS) return join(home, "Library", "Application Support", "paseo-host-runtime");
  return join(home, ".local", "state", "paseo-host-runtime");
}

/**
 * The words around the home when a command that only looks (ls, ps, logs) finds none: written
 * by operator/common.ts missingHomeMessage, recognized in a host's answer by missingHomeIn
 * (a host without a home has nothing yet: no workspaces, no executions).
 */
const MISSING_HOME = ["runtime home ", " does not exist (nothing was ever created there"] as const;

/** That `home` does not exist, in the words missingHomeIn recognizes; `hint` closes the parenthesis. */
export function missingHomeText(home: string, hint: string): string {
  return `${MISSING_HOME[0]}${home}${MISSING_HOME[1]}; ${hint})`;
}

/** The home a host's `ls`/`ps`/`logs` said does not exist (missingHomeText as its first line on stderr), or null. */
export function missingHomeIn(stderr: string): string | null {
  const line = withoutProgramName(stderr.split("\n")[0]!);
  const end = line.indexOf(MISSING_HOME[1]);
  return line.startsWith(MISSING_HOME[0]) && end !== -1 ? line.slice(MISSING_HOME[0].length, end) : null;
}

/** A home setting (PASEO_HOST_RUNTIME_HOME, XDG_STATE_HOME) that cannot name a home. */
export class HomeSettingError extends Error {}

function requireAbsolute(path: string, name: string): string {
  if (!isAbsolute(path)) throw new HomeSettingError(`${name} must be an absolute path, got ${JSON.stringify(path)}`);
  return path;
}

/**
 * Every entry the runtime makes directly in a home, the one list: whatever makes one takes its
 * path from homeEntry() (or homeTemporary()), so a name missing here does not compile, and a
 * directory holding nothing else is a home of its own.
 */
const HOME_ENTRIES = {
  /** The store (store/db.ts), and beside it SQLite's and the writer lock's files (STORE_COMPANIONS). */
  store: "state.sqlite",
  /** The key of create-input digests (store/input-digest.ts). */
  inputKey: "input.key",
  /** Every workspace's owned storage (workspace/paths.ts). */
  workspaces: "workspaces",
  /** The runtime log (log/files.ts). */
  log: "log",
  /** ssh control sockets of `--remote` (remote/ssh.ts). */
  ssh: "ssh",
  /** On a remote host: the repositories sent from the daemon's machine (remote/mirror.ts). */
  mirrors: "mirrors",
  /** On a remote host: the paseo.json seeds sent with them (remote/mirror.ts). */
  seeds: "seeds",
} as const;

export type HomeEntry = keyof typeof HOME_ENTRIES;

/** The writer lock's suffix on the store's path (store/writer-lock.ts). */
export const WRITER_LOCK_SUFFIX = ".writer-lock";

/** What SQLite (its WAL, shared memory, rollback journal) and the writer lock add to the store's name. */
const STORE_COMPANIONS = ["-wal", "-shm", "-journal", WRITER_LOCK_SUFFIX];

/** `<home>/<entry>`. */
export function homeEntry(home: string, entry: HomeEntry): string {
  return join(home, HOME_ENTRIES[entry]);
}

/** `<home>/.<entry>.<unique>`: a file written beside an entry before it is linked or renamed into place. */
export function homeTemporary(home: string, entry: HomeEntry, unique: string): string {
  return join(home, `.${HOME_ENTRIES[entry]}.${unique}`);
}

/** Whether `name`, directly in a home, is something the runtime makes there. */
function isHomeEntry(name: string): boolean {
  const names: readonly string[] = Object.values(HOME_ENTRIES);
  if (names.includes(name)) return true;
  if (STORE_COMPANIONS.some((suffix) => name === `${HOME_ENTRIES.store}${suffix}`)) return true;
  return names.some((entry) => name.startsWith(`.${entry}.`));
}

/**
 * Whether `dir` holds nothing but what a runtime home holds, and is not a shared directory
 * (sticky, like /tmp): only then is changing its owner or mode a fix rather than a hazard.
 */
export function isOwnHome(dir: string): boolean {
  // Missing, or one we may not look into: nothing says it is a home of ours.
  return tolerating([...PATH_MISSING, ...NO_ACCESS], false, () => {
    if ((lstatSync(dir).mode & 0o1000) !== 0) return false;
    return readdirSync(dir).every(isHomeEntry);
  });
}

/**
 * Why a home is refused. `path` is what is wrong: the home itself, or (for the `ancestor-*`
 * kinds) the nearest existing directory above a home that does not exist yet.
 */
type HomeProblem = "not-directory" | "symlink" | "owner" | "mode" | "ancestor-not-directory" | "ancestor-not-writable";

/** A runtime home (or a private directory in it) that cannot be used or created. */
export class HomeError extends Error {
  override name = "HomeError";
  constructor(
    message: string,
    readonly problem: HomeProblem,
    readonly path: string,
  ) {
    super(message);
  }
}

/**
 * Creates the home (mode 0700) when missing and refuses one another user could tamper with:
 * the store decides which processes get signalled and which directories get deleted.
 */
export function ensureHome(home: string): string {
  try {
    mkdirSync(home, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw creationProblem(home) ?? new Error(`cannot create runtime home ${home}: ${(error as Error).message}`);
  }
  checkHome(home);
  return home;
}

/** Throws when `home` is not a directory owned by us and closed to group and others. */
export function checkHome(home: string): void {
  checkPrivateDirectory(home, "runtime home", () => isOwnHome(home));
}

/**
 * Throws a HomeError when `path` (named `what` in the message) is not a real directory owned by
 * this user, closed to group and others: the same rule for the home and for what the runtime
 * makes in it. `ownDirectory` says whether chmod is the runtime's to suggest (never for a
 * shared directory like /tmp); it is asked only when the mode is wrong.
 */
export function checkPrivateDirectory(path: string, what: string, ownDirectory: () => boolean = () => true): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) throw new HomeError(`${what} ${path} is a symbolic link; refusing to follow it (give the directory it points to)`, "symlink", path);
  if (!stat.isDirectory()) throw new HomeError(`${what} ${path} is not a directory`, "not-directory", path);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    throw new HomeError(`${what} ${path} is owned by uid ${stat.uid}, not by this user (uid ${uid}); refusing to use it`, "owner", path);
  }
  if ((stat.mode & 0o022) !== 0) {
    const mode = (stat.mode & 0o7777).toString(8);
    const fix = ownDirectory() ? `fix it with: chmod 700 ${path}` : "it is not a directory of its own (shared, or it holds other files): use a directory of its own";
    throw new HomeError(`${what} ${path} is group- or world-writable (mode ${mode}); ${fix}`, "mode", path);
  }
}

/**
 * Why a home that does not exist yet could not be created, or null when it can: the nearest
 * existing path above it must be a directory this user may write into.
 */
export function creationProblem(home: string): HomeError | null {
  let ancestor = dirname(home);
  while (!existsSync(ancestor) && ancestor !== dirname(ancestor)) ancestor = dirname(ancestor);
  // A dangling symlink, a loop or an unreadable entry: not a directory we can create anything in.
  const isDirectory = tolerating(PATH_UNRESOLVABLE, false, () => statSync(ancestor).isDirectory());
  if (!isDirectory) return new HomeError(`runtime home ${home} cannot be created: ${ancestor} is not a directory`, "ancestor-not-directory", ancestor);
  try {
    accessSync(ancestor, constants.W_OK | constants.X_OK);
  } catch (error) {
    if (!hasErrno(error, NO_ACCESS)) throw error;
    const uid = process.getuid?.();
    return new HomeError(
      `runtime home ${home} does not exist and cannot be created: ${ancestor} is not writable by this user${uid === undefined ? "" : ` (uid ${uid})`}`,
      "ancestor-not-writable",
      ancestor,
    );
  }
  return null;
}
