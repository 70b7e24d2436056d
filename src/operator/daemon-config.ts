/**
 * The Paseo daemon's config.json, as far as this runtime cares: where it lives and which of its
 * `workspaceRuntimes` run this binary. Used by `config check` and by `--config FILE`.
 *
 * The daemon keeps its configuration in `$PASEO_HOME/config.json`, PASEO_HOME defaulting to
 * `~/.paseo` (a leading `~` is the user's home directory). A runtime entry is
 * `{"type":"command","command":[exe, ...fixedArgs],"options":{…}}`; the later daemon resolves
 * `exe` itself: absolute as is, `.`-prefixed relative to its home, `@scope/name` as a package's
 * bin, anything else on its PATH.
 */
import { realPathOrNull } from "../platform/lookup.ts";
import { readFileSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { lazyOs } from "../platform/lazy.ts";
import { errnoOf } from "../platform/errno.ts";
import { parseJsonText } from "../protocol/json-text.ts";

/** This runtime's executable name (what `command[0]` is called when it is another copy of us). */
const PROGRAM_NAME = "paseo-host-runtime";

/** A config file that cannot be read or is not a daemon configuration. */
export class DaemonConfigError extends Error {
  override name = "DaemonConfigError";
}

/** One `workspaceRuntimes` entry of type "command". */
export interface CommandRuntime {
  name: string;
  /** The argv as written, when it is an array of strings. */
  argv: string[] | null;
  /** `options` exactly as written (undefined when absent). */
  options: unknown;
  /** command[0] resolved to a file the way the daemon would, or null. */
  program: string | null;
  /** Why `program` is null, or a note on how it was resolved. */
  note: string | null;
  /** command[0] is this very binary (same file after resolving symlinks). */
  thisBinary: boolean;
  /** command[0] is another file named paseo-host-runtime (another install or version). */
  otherCopy: boolean;
  /** The `--remote URL` among the fixed arguments: the runtime then works on that host. */
  remote: string | null;
}

/** A daemon configuration: its path, the daemon home it belongs to, and its command runtimes. */
export interface DaemonConfig {
  path: string;
  home: string;
  runtimes: CommandRuntime[];
}

function expandTilde(path: string, userHome: string): string {
  if (path === "~") return userHome;
  if (path.startsWith("~/")) return join(userHome, path.slice(2));
  return path;
}

/** The daemon home: $PASEO_HOME, else ~/.paseo. */
export function daemonHome(env: NodeJS.ProcessEnv = process.env): string {
  const userHome = env.HOME || lazyOs().homedir();
  return resolve(expandTilde(env.PASEO_HOME || "~/.paseo", userHome));
}

/** Where the daemon reads its configuration: `$PASEO_HOME/config.json` (default `~/.paseo/config.json`). */
export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(daemonHome(env), "config.json");
}

/** Reads and parses a config.json. Throws DaemonConfigError with a message a person can act on. */
export function readDaemonConfig(path: string, env: NodeJS.ProcessEnv = process.env): DaemonConfig {
  const absolute = resolve(path);
  let text: string;
  try {
    text = readFileSync(absolute, "utf8");
  } catch (error) {
    const code = errnoOf(error);
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : (error as Error).message;
    throw new DaemonConfigError(`cannot read the daemon configuration ${absolute}: ${why}`);
  }
  let config: unknown;
  try {
    config = parseJsonText(text);
  } catch (error) {
    throw new DaemonConfigError(`${absolute} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof config !== "object" || config === null || Array.isArray(config)) throw new DaemonConfigError(`${absolute} does not hold a JSON object`);
  const entries = (config as { workspaceRuntimes?: unknown }).workspaceRuntimes;
  if (entries !== undefined && (typeof entries !== "object" || entries === null || Array.isArray(entries))) {
    throw new DaemonConfigError(`${absolute}: workspaceRuntimes must be an object (runtime id to runtime)`);
  }
  // The daemon home is the directory config.json lives in (where `.`-prefixed commands start).
  const home = dirname(absolute);
  const runtimes = Object.entries((entries ?? {}) as Record<string, unknown>)
    .filter(([, entry]) => typeof entry === "object" && entry !== null && (entry as { type?: unknown }).type === "command")
    .map(([name, entry]) => commandRuntime(name, entry as { command?: unknown; options?: unknown }, home, env));
  return { path: absolute, home, runtimes };
}

function commandRuntime(name: string, entry: { command?: unknown; options?: unknown }, home: string, env: NodeJS.ProcessEnv): CommandRuntime {
  const command = entry.command;
  const argv = Array.isArray(command) && command.length > 0 && command.every((word) => typeof word === "string") ? (command as string[]) : null;
  const runtime: CommandRuntime = { name, argv, options: entry.options, program: null, note: null, thisBinary: false, otherCopy: false, remote: null };
  if (argv === null) {
    runtime.note = "its command is not a non-empty array of strings";
    return runtime;
  }
  const [exe] = argv as [string];
  runtime.remote = remoteOf(argv.slice(1));
  if (/^@[^/]+\/[^/]+$/.test(exe)) {
    runtime.note = `${exe} is a package name (the daemon runs that package's bin); not resolved here`;
    return runtime;
  }
  let program: string | null;
  if (isAbsolute(exe)) program = exe;
  else if (exe.startsWith(".")) program = resolve(home, exe);
  else {
    program = Bun.which(exe, { PATH: env.PATH ?? "" });
    if (program === null) runtime.note = `${exe} is not on this PATH (${env.PATH ?? "unset"}); the daemon's PATH may differ`;
  }
  runtime.program = program;
  if (program !== null) {
    const real = realPathOrNull(program);
    runtime.thisBinary = real !== null && real === realPathOrNull(process.execPath);
    runtime.otherCopy = !runtime.thisBinary && basename(program) === PROGRAM_NAME;
    if (real === null) runtime.note = `${program} does not exist`;
  }
  return runtime;
}

/** The URL of a `--remote URL` / `--remote=URL` among the fixed arguments, or null. */
function remoteOf(args: readonly string[]): string | null {
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (word === "--remote") return args[i + 1] ?? null;
    if (word.startsWith("--remote=")) return word.slice("--remote=".length);
  }
  return null;
}

/**
 * The argv[0] the daemon runs a runtime's command with (what its configuration fingerprint is
 * made of): command[0] as written when absolute, else the file it resolves to; null when unknown.
 */
export function argv0Of(runtime: CommandRuntime): string | null {
  if (runtime.argv === null) return null;
  return isAbsolute(runtime.argv[0]!) ? runtime.argv[0]! : runtime.program;
}

/** The runtimes that run paseo-host-runtime: this binary, or another copy of it. */
export function ourRuntimes(config: DaemonConfig): CommandRuntime[] {
  return config.runtimes.filter((runtime) => runtime.thisBinary || runtime.otherCopy);
}
