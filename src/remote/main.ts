/**
 * Entry of a `--remote` call: `paseo-host-runtime --remote ssh://… [--ssh-config FILE] <op> …`.
 * The operation's own argv after the global flags is exactly the contract's, parsed by the same
 * parser and command table as a local call.
 */
import { isAbsolute } from "node:path";
import { UsageError, commandUsage, parseArgs, parseGlobalFlags, type CommandTable, type Invocation } from "../argv.ts";
import { diagnose, writeAll, writeStdout } from "../output.ts";
import type { RemoteCall } from "./context.ts";
import { REMOTE_OPERATIONS, forward } from "./dispatch.ts";
import { parseSshUrl } from "../ssh-url.ts";

const USAGE = "Usage: paseo-host-runtime --remote ssh://[user@]host[:port][/path/to/paseo-host-runtime] [--ssh-config FILE] <operation> [options]\n";

/** Runs a remote call; returns the exit status (2 for usage errors, like a local call). */
export async function remoteMain(argv: readonly string[], commands: CommandTable): Promise<number> {
  let call: RemoteCall;
  let invocation: Invocation;
  try {
    const globals = parseGlobalFlags(argv);
    if (globals.remote === null) throw new UsageError("--ssh-config is only for --remote ssh://…");
    let primary;
    try {
      primary = parseSshUrl(globals.remote);
    } catch (error) {
      throw new UsageError(`--remote: ${(error as Error).message}`);
    }
    if (globals.sshConfig !== null && !isAbsolute(globals.sshConfig)) throw new UsageError(`--ssh-config must be an absolute path, got ${JSON.stringify(globals.sshConfig)}`);
    const [command] = globals.rest;
    if (command === undefined) throw new UsageError("missing operation after --remote");
    if (!(REMOTE_OPERATIONS as readonly string[]).includes(command)) {
      throw new UsageError(`--remote carries the protocol operations (${REMOTE_OPERATIONS.join(", ")}), not ${JSON.stringify(command)}; for a check of a host use \`paseo-host-runtime remote doctor ssh://…\``);
    }
    if (commands[command] && (globals.rest.includes("--help") || globals.rest.includes("-h"))) {
      writeStdout(commandUsage(commands, command));
      return 0;
    }
    invocation = parseArgs(commands, globals.rest);
    call = { primary, primaryUrl: globals.remote, configFile: globals.sshConfig };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    diagnose(error.message);
    writeAll(2, error.command ? commandUsage(commands, error.command) : USAGE);
    return 2;
  }
  return await forward(call, invocation);
}
