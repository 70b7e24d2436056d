/**
 * Which runtime an operator command works on, seen as the daemon sees it: the options of a
 * runtime of the daemon's config.json (`--config FILE [--runtime NAME]`; `--runtime NAME` alone
 * reads the default config path), or inline (`--options-json`), with `--home` and `--owner` over
 * them; and how the daemon runs that runtime: its argv[0] and, for one that works on remote
 * hosts, its `--remote URL [--ssh-config FILE]` (the config's command, or the same words given
 * before the operator command). Protocol operations then run with exactly those words
 * (common.ts runOperation), so what works here works for the daemon.
 */
import { existsSync } from "node:fs";
import { UsageError, parseGlobalFlags, type Invocation } from "../argv.ts";
import { parseJsonText } from "../protocol/json-text.ts";
import { remoteCallOf, type RemoteCall } from "../remote/context.ts";
import { DaemonConfigError, argv0Of, defaultConfigPath, ourRuntimes, readDaemonConfig, type CommandRuntime } from "./daemon-config.ts";

export interface Selection {
  /** The daemon's options for the runtime, `--home` and `--owner` applied. */
  options: Record<string, unknown>;
  /** The runtime's name in the config, or null (no config). */
  runtime: string | null;
  /** The config file it comes from, or null. */
  configPath: string | null;
  /** The argv[0] the daemon runs it with, when a config says. */
  argv0: string | undefined;
  /** The words the daemon puts between the program and the operation (`--remote URL …`), or none. */
  globals: string[];
  /** The call those words make: the runtime works on remote hosts; null for this host. */
  remote: RemoteCall | null;
}

const selections = new WeakMap<Invocation, Selection>();
let current: Selection | null = null;

/** The runtime `invocation` selects (resolved once). Throws UsageError. */
export function selection(invocation: Invocation): Selection {
  let found = selections.get(invocation);
  if (!found) {
    found = resolveSelection(invocation);
    selections.set(invocation, found);
    current = found;
  }
  return found;
}

/** The selection of this process's operator command, once it was made (protocol operations run with it). */
export function currentSelection(): Selection | null {
  return current;
}

function resolveSelection(invocation: Invocation): Selection {
  const inline = invocation.flags.get("options-json");
  const file = invocation.flags.get("config");
  const runtime = invocation.flags.get("runtime");
  const command = invocation.command;
  if (inline !== undefined && file !== undefined) throw new UsageError("give either --options-json or --config, not both", command);
  const given = invocation.globals;
  if (given && (file !== undefined || runtime !== undefined)) {
    throw new UsageError("--remote before the command already names the runtime; give its options with --options-json, or drop --remote and use --config FILE --runtime NAME", command);
  }
  let chosen: Selection;
  if (file !== undefined || runtime !== undefined) chosen = fromConfig(file, runtime, command);
  else {
    const remote = given ? remoteCallOf(given, command) : null;
    const globals = given ? ["--remote", given.remote!, ...(given.sshConfig === null ? [] : ["--ssh-config", given.sshConfig])] : [];
    const options = inline === undefined ? {} : (parseJsonText(inline) as Record<string, unknown>);
    chosen = { options, runtime: null, configPath: null, argv0: undefined, globals, remote };
  }
  const home = invocation.flags.get("home");
  if (home !== undefined) chosen.options.stateDirectory = home;
  const owner = invocation.flags.get("owner");
  if (owner !== undefined) chosen.options.owner = owner;
  return chosen;
}

/** The runtime of a daemon config: `file`, else the default path when it exists (`--runtime` alone). */
function fromConfig(file: string | undefined, runtime: string | undefined, command: string): Selection {
  const path = file ?? defaultConfigPath();
  if (file === undefined && !existsSync(path)) {
    throw new UsageError(`--runtime ${JSON.stringify(runtime)} names a runtime of the daemon's config.json, and the default one (${path}) does not exist: give --config FILE`, command);
  }
  let config;
  try {
    config = readDaemonConfig(path);
  } catch (error) {
    if (error instanceof DaemonConfigError) throw new UsageError(`--config: ${error.message}`, command);
    throw error;
  }
  const candidates = runtime === undefined ? ourRuntimes(config) : config.runtimes.filter((entry) => entry.name === runtime);
  const names = config.runtimes.map((entry) => JSON.stringify(entry.name)).join(", ") || "none";
  if (candidates.length === 0) {
    const what = runtime === undefined ? "no runtime there runs paseo-host-runtime" : `it has no command runtime ${JSON.stringify(runtime)}`;
    throw new UsageError(`--config ${config.path}: ${what} (command runtimes: ${names})`, command);
  }
  if (candidates.length > 1) throw new UsageError(`--config ${config.path}: several runtimes run paseo-host-runtime (${candidates.map((entry) => JSON.stringify(entry.name)).join(", ")}); pick one with --runtime NAME`, command);
  const entry = candidates[0]!;
  const options = entry.options ?? {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) throw new UsageError(`--config: runtime ${JSON.stringify(entry.name)} has options that are not an object`, command);
  const { globals, remote } = remoteWords(entry, command);
  return { options: { ...(options as Record<string, unknown>) }, runtime: entry.name, configPath: config.path, argv0: argv0Of(entry) ?? undefined, globals, remote };
}

/** A runtime's own words after its program: none, or `--remote URL [--ssh-config FILE]` and nothing else. */
function remoteWords(entry: CommandRuntime, command: string): { globals: string[]; remote: RemoteCall | null } {
  const words = entry.argv?.slice(1) ?? [];
  if (entry.remote === null) {
    if (words.length > 0) throw new UsageError(`--config: runtime ${JSON.stringify(entry.name)} runs its command with ${JSON.stringify(words)} before the operation, which this binary does not take`, command);
    return { globals: [], remote: null };
  }
  const name = JSON.stringify(entry.name);
  let split;
  try {
    split = parseGlobalFlags(words);
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(`--config: runtime ${name}: ${error.message}`, command);
    throw error;
  }
  if (split.rest.length > 0) throw new UsageError(`--config: runtime ${name} has ${JSON.stringify(split.rest)} after its --remote flags, where the daemon puts the operation`, command);
  try {
    return { globals: words, remote: remoteCallOf(split, command) };
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(`--config: runtime ${name}: ${error.message}`, command);
    throw error;
  }
}

/**
 * What to say when a command finds no runtime home: the flags that select one, and the runtimes
 * of the daemon's default config when there is one.
 */
export function selectionHint(chosen: Selection | null): string {
  if (chosen?.runtime != null) return `runtime ${JSON.stringify(chosen.runtime)} of ${chosen.configPath} has made no workspace yet`;
  const path = defaultConfigPath();
  let runtimes: string[] = [];
  try {
    if (existsSync(path)) runtimes = ourRuntimes(readDaemonConfig(path)).map((entry) => entry.name);
  } catch (error) {
    // An unreadable config is config check's to report.
    if (!(error instanceof DaemonConfigError)) throw error;
  }
  const theirs = runtimes.length > 0 ? ` (${path} has ${runtimes.map((name) => JSON.stringify(name)).join(", ")})` : "";
  return `check --home, options.stateDirectory or PASEO_HOST_RUNTIME_HOME, or take the daemon's runtime with --config FILE --runtime NAME${theirs}`;
}
