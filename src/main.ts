/**
 * The entry point. It statically imports only what every call needs (argv, the stdout/stderr
 * paths, the version); each operation's module is loaded when it runs (src/ops/index.ts), and
 * the operator commands' table only when the command is not a protocol one.
 */
import { COMMANDS, UsageError, addCommand, commandHelp, commandName, commandUsage, helpText, isRemoteCall, parseArgs, subcommands, type Invocation } from "./cli.ts";
import { diagnose, writeAll, writeStdout } from "./output.ts";
import { TARGET, VERSION } from "./version.ts";
import { HANDLERS, type Handler } from "./ops/index.ts";
import { isTerminalQuick } from "./platform/tty.ts";

let operatorHandlers: Record<string, Handler> | undefined;

/**
 * Operator commands join the table here, so cli.ts never imports from ops/ (flow goes one way).
 * Only a command the protocol table does not know (or help) needs them.
 */
async function loadOperatorCommands(): Promise<void> {
  if (operatorHandlers) return;
  const operator = await import("./operator/index.ts");
  for (const [name, spec] of Object.entries(operator.OPERATOR_COMMANDS)) addCommand(name, spec);
  operatorHandlers = operator.OPERATOR_HANDLERS;
}

const GENERAL_USAGE = "Usage: paseo-host-runtime <command> [options]\nRun `paseo-host-runtime --help` for the list of commands.\n";

/** A usage error: the message, then the usage of the command it concerns (or the general one). */
function usageError(error: UsageError): number {
  diagnose(error.message);
  writeAll(2, error.command ? commandUsage(error.command) : GENERAL_USAGE);
  return 2;
}

/** A command name, or a command group (`workspace`), that help can describe. */
function isKnown(name: string): boolean {
  return COMMANDS[name] !== undefined || subcommands(name).length > 0;
}

/** `help [COMMAND...]`, `--help`, `-h`. */
function help(words: string[]): number {
  if (words.length === 0) {
    writeStdout(helpText(VERSION));
    return 0;
  }
  const named = commandName(words)!;
  if (!isKnown(named.name) || words.length > named.words) {
    return usageError(new UsageError(`help: unknown command ${JSON.stringify(words.join(" "))}`));
  }
  writeStdout(commandHelp(named.name));
  return 0;
}

/** `<command> ... --help` (before any `--`): help wins over everything else on the line. */
function asksForHelp(argv: readonly string[]): string | null {
  const named = commandName(argv);
  if (!named || !isKnown(named.name)) return null;
  const end = argv.indexOf("--");
  const words = argv.slice(named.words, end === -1 ? undefined : end);
  return words.includes("--help") || words.includes("-h") ? named.name : null;
}

async function main(argv: string[]): Promise<number> {
  if (!Object.hasOwn(COMMANDS, argv[0] ?? "")) await loadOperatorCommands();
  if (argv.length === 0) {
    writeAll(2, helpText(VERSION));
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
    writeStdout(commandHelp(helpFor));
    return 0;
  }
  if (isRemoteCall(argv)) {
    const { remoteMain } = await import("./remote/main.ts");
    try {
      return await remoteMain(argv);
    } catch (error) {
      // `--remote … exec` run by hand, without the daemon's fd 3 and fd 4.
      if (error instanceof UsageError) return usageError(error);
      throw error;
    }
  }
  let invocation: Invocation;
  try {
    invocation = parseArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return usageError(error);
  }
  const spec = COMMANDS[invocation.command]!;
  // A person who runs a protocol operation by hand would otherwise wait on a silent terminal.
  if (spec.stdin === "request" && isTerminalQuick(0)) {
    diagnose(`${invocation.command} reads one lifecycle request (JSON) on stdin, and stdin is a terminal; nothing was read or changed`);
    writeAll(2, `Pipe one in, or use the operator command:\n${(spec.examples ?? []).map((example) => `  ${example}\n`).join("")}`);
    return 2;
  }
  const load = HANDLERS[invocation.command];
  const handler = load ? await load() : operatorHandlers?.[invocation.command];
  if (!handler) {
    diagnose(`${invocation.command} is not implemented in this build`);
    return 1;
  }
  try {
    return await handler(invocation);
  } catch (error) {
    // An operator command that finds a bad flag combination only once it reads the flags.
    if (error instanceof UsageError) return usageError(error);
    throw error;
  }
}

try {
  const code = await main(process.argv.slice(2));
  process.exit(code);
} catch (error) {
  diagnose(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
