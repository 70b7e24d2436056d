/**
 * Entry of a `--remote` call: `paseo-host-runtime --remote ssh://… [--ssh-config FILE] <op> …`.
 * The operation's own argv after the global flags is exactly the contract's, parsed by the same
 * parser and command table as a local call.
 */
import { UsageError, commandUsage, parseArgs, parseGlobalFlags, type CommandTable, type Invocation } from "../argv.ts";
import { diagnose, writeAll, writeStdout } from "../output.ts";
import { remoteCallOf, type RemoteCall } from "./context.ts";
import { REMOTE_OPERATIONS, forward } from "./dispatch.ts";
import { SSH_URL_GRAMMAR } from "../ssh-url.ts";

const USAGE = `Usage: paseo-host-runtime --remote ${SSH_URL_GRAMMAR} [--ssh-config FILE] <operation> [options]\n`;

/** Runs a remote call; returns the exit status (2 for usage errors, like a local call). */
export async function remoteMain(argv: readonly string[], commands: CommandTable): Promise<number> {
  let call: RemoteCall;
  let invocation: Invocation;
  try {
    const globals = parseGlobalFlags(argv);
    const [command] = globals.rest;
    call = remoteCallOf(globals);
    if (command === undefined) throw new UsageError("missing operation after --remote");
    if (!(REMOTE_OPERATIONS as readonly string[]).includes(command)) {
      throw new UsageError(
        `--remote carries the protocol operations (${REMOTE_OPERATIONS.join(", ")}) and the operator commands that take --runtime, not ${JSON.stringify(command)}; for a check of a host use \`paseo-host-runtime remote doctor ssh://…\``,
      );
    }
    if (commands[command] && (globals.rest.includes("--help") || globals.rest.includes("-h"))) {
      writeStdout(commandUsage(commands, command));
      return 0;
    }
    invocation = parseArgs(commands, globals.rest);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    diagnose(error.message);
    writeAll(2, error.command ? commandUsage(commands, error.command) : USAGE);
    return 2;
  }
  return await forward(call, invocation);
}
