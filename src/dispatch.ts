/**
 * Every call but a bare `describe` (src/main.ts): argv against the command table. It statically
 * imports only what every such call needs (argv, the command table, the stdout/stderr paths, the
 * version); the table (src/cli.ts) loads a command's module only when it runs, and builds the
 * operator commands' specs only when the call is not a protocol one.
 */
import { mark } from "./trace.ts";
import { UsageError, commandHelp, commandName, commandUsage, hasGlobalFlags, helpText, parseArgs, parseGlobalFlags, subcommands, type Invocation, type WordsHandler } from "./argv.ts";
import { commandsFor } from "./cli.ts";
import { diagnose, writeAll, writeStdout } from "./output.ts";
import { TARGET, VERSION } from "./version.ts";
import { isTerminalQuick } from "./platform/tty.ts";
import { startKeepalive } from "./keepalive.ts";

/** The commands this call can name: the protocol ones alone when argv names one (src/cli.ts). */
const COMMANDS = commandsFor(process.argv.slice(2));

const GENERAL_USAGE = "Usage: paseo-host-runtime <command> [options]\nRun `paseo-host-runtime --help` for the list of commands.\n";

/** A usage error: the message, then the usage of the command it concerns (or the general one). */
function usageError(error: UsageError): number {
  diagnose(error.message);
  writeAll(2, error.command ? commandUsage(COMMANDS, error.command) : GENERAL_USAGE);
  return 2;
}

/** A command name, or a command group (`workspace`), that help can describe. */
function isKnown(name: string): boolean {
  return COMMANDS[name] !== undefined || subcommands(COMMANDS, name).length > 0;
}

/** `help [COMMAND...]`, `--help`, `-h`. */
function help(words: string[]): number {
  if (words.length === 0) {
    writeStdout(helpText(COMMANDS, VERSION));
    return 0;
  }
  const named = commandName(COMMANDS, words)!;
  if (!isKnown(named.name) || words.length > named.words) {
    return usageError(new UsageError(`help: unknown command ${JSON.stringify(words.join(" "))}`));
  }
  writeStdout(commandHelp(COMMANDS, named.name));
  return 0;
}

/** `<command> ... --help` (before any `--`): help wins over everything else on the line. */
function asksForHelp(argv: readonly string[]): string | null {
  const named = commandName(COMMANDS, argv);
  if (!named || !isKnown(named.name)) return null;
  const end = argv.indexOf("--");
  const words = argv.slice(named.words, end === -1 ? undefined : end);
  return words.includes("--help") || words.includes("-h") ? named.name : null;
}

/** A call that parses its own words: `--remote … <operation>`, `remote doctor URL`. */
async function runWords(run: WordsHandler, words: readonly string[]): Promise<number> {
  try {
    return await run(words, COMMANDS);
  } catch (error) {
    // `--remote … exec` run by hand, without the daemon's fd 3 and fd 4.
    if (error instanceof UsageError) return usageError(error);
    throw error;
  }
}

/**
 * `--remote URL [--ssh-config FILE] <operator command> …`: the command works on that remote
 * runtime (src/operator/selection.ts). Returns the global flags and the command's own words;
 * null when a protocol operation (or anything else) follows, which remote/main.ts handles; the
 * exit status when it printed help or a usage error.
 */
function operatorAfterGlobals(argv: string[]): { globals: NonNullable<Invocation["globals"]>; rest: string[] } | number | null {
  let split;
  try {
    split = parseGlobalFlags(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return null;
  }
  const named = commandName(COMMANDS, split.rest);
  const spec = named === null ? undefined : COMMANDS[named.name];
  if (split.remote === null || !spec || spec.protocol || !(spec.optional ?? []).includes("runtime")) return null;
  const helpFor = asksForHelp(split.rest);
  if (helpFor !== null) {
    writeStdout(commandHelp(COMMANDS, helpFor));
    return 0;
  }
  return { globals: { remote: split.remote, sshConfig: split.sshConfig }, rest: split.rest };
}

/** Runs the call argv names; its exit status (what it throws, src/main.ts reports). */
export async function dispatch(argv: string[]): Promise<number> {
  startKeepalive();
  if (argv.length === 0) {
    writeAll(2, helpText(COMMANDS, VERSION));
    return 2;
  }
  const first = argv[0]!;
  if (first === "--help" || first === "-h" || first === "help") return help(argv.slice(1));
  if (first === "--version" || first === "-V" || first === "version") {
    if (argv.length > 1) return usageError(new UsageError(`${first} takes no arguments; got ${JSON.stringify(argv[1])}`));
    writeStdout(`paseo-host-runtime ${VERSION} (${TARGET}, bun ${Bun.version})\n`);
    return 0;
  }
  const helpFor = asksForHelp(argv);
  if (helpFor !== null) {
    writeStdout(commandHelp(COMMANDS, helpFor));
    return 0;
  }
  let globals: Invocation["globals"];
  if (hasGlobalFlags(argv)) {
    const operator = operatorAfterGlobals(argv);
    if (operator === null) return await runWords((await import("./remote/main.ts")).remoteMain, argv);
    if (typeof operator === "number") return operator;
    ({ globals, rest: argv } = operator);
  }
  const named = commandName(COMMANDS, argv)!;
  const words = COMMANDS[named.name]?.words;
  if (words) return await runWords(await words(), argv.slice(named.words));
  let invocation: Invocation;
  try {
    invocation = parseArgs(COMMANDS, argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return usageError(error);
  }
  if (globals) invocation.globals = globals;
  const spec = COMMANDS[invocation.command]!;
  // A person who runs a protocol operation by hand would otherwise wait on a silent terminal.
  if (spec.stdin === "request" && isTerminalQuick(0)) {
    diagnose(`${invocation.command} reads one lifecycle request (JSON) on stdin, and stdin is a terminal; nothing was read or changed`);
    writeAll(2, `Pipe one in, or use the operator command:\n${(spec.examples ?? []).map((example) => `  ${example}\n`).join("")}`);
    return 2;
  }
  if (!spec.handler) {
    diagnose(`${invocation.command} is not implemented in this build`);
    return 1;
  }
  const handler = await spec.handler();
  mark("command loaded");
  try {
    return await handler(invocation);
  } catch (error) {
    // An operator command that finds a bad flag combination only once it reads the flags.
    if (error instanceof UsageError) return usageError(error);
    throw error;
  }
}
