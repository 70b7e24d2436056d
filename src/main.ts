import { COMMANDS, UsageError, addCommand, commandUsage, helpText, parseArgs, type Invocation } from "./cli.ts";
import { diagnose, writeAll, writeStdout } from "./output.ts";
import { TARGET, VERSION } from "./version.ts";
import { HANDLERS } from "./ops/index.ts";
import { OPERATOR_COMMANDS } from "./ops/operator/index.ts";
import { SANDBOX_EXEC, SANDBOX_INIT, sandboxExec, sandboxInit } from "./exec/sandbox-init.ts";

// Operator commands join the table here, so cli.ts never imports from ops/ (flow goes one way).
for (const [name, spec] of Object.entries(OPERATOR_COMMANDS)) addCommand(name, spec);

const GENERAL_USAGE = "Usage: paseo-host-runtime <command> [options]\nRun `paseo-host-runtime --help` for the list of commands.\n";

async function main(argv: string[]): Promise<number> {
  // Inside the Linux sandbox only (bwrap runs this binary there); never listed in --help.
  if (argv[0] === SANDBOX_INIT && argv.length === 1) return sandboxInit();
  if (argv[0] === SANDBOX_EXEC && argv.length === 1) return sandboxExec();
  if (argv.length === 0) {
    writeAll(2, helpText(VERSION));
    return 2;
  }
  if (argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    writeStdout(argv[1] && COMMANDS[argv[1]] ? commandUsage(argv[1]) : helpText(VERSION));
    return 0;
  }
  if (argv[0] === "--version") {
    writeStdout(`paseo-host-runtime ${VERSION} (${TARGET}, bun ${Bun.version})\n`);
    return 0;
  }
  if (argv.length > 1 && COMMANDS[argv[0]!] && (argv.includes("--help") || argv.includes("-h")) && !argv.includes("--")) {
    writeStdout(commandUsage(argv[0]!));
    return 0;
  }
  let invocation: Invocation;
  try {
    invocation = parseArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    diagnose(error.message);
    writeAll(2, error.command ? commandUsage(error.command) : GENERAL_USAGE);
    return 2;
  }
  const handler = HANDLERS[invocation.command];
  if (!handler) {
    diagnose(`${invocation.command} is not implemented in this build`);
    return 1;
  }
  return await handler(invocation);
}

try {
  const code = await main(process.argv.slice(2));
  process.exit(code);
} catch (error) {
  diagnose(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
