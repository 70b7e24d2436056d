/**
 * The one transformation that puts a workload in the sandbox: its launch (program, argv, env)
 * becomes what is spawned. Linux process tree: wrapper → bwrap (its monitor) → bwrap's init,
 * pid 1 of a new pid namespace (reaps orphans) → this runtime's sandbox init (init.ts), which
 * starts the workload and reports its exact wait status, something bwrap cannot (it turns a
 * death by signal n into status 128+n, on its exit and on --json-status-fd alike). macOS
 * (unverified here): sandbox-exec in front of the workload.
 */
import { isMacOS } from "../platform/os.ts";
import { bwrapArguments } from "./bwrap.ts";
import { SANDBOX_FDS, SANDBOX_INIT_PATH } from "./init-protocol.ts";
import { sandboxProfile } from "./seatbelt.ts";
import type { Launch, SandboxView } from "./view.ts";
// @ts-expect-error: a text import (the bundle embeds the file's text, not its code): see init.ts.
import INIT_SOURCE from "./init.ts" with { type: "text" };

/** init.ts's text, which bwrap copies into the sandbox at SANDBOX_INIT_PATH. */
export const SANDBOX_INIT_SOURCE = INIT_SOURCE as string;

/**
 * How bwrap starts the sandbox init: this binary's embedded engine running init.ts, with no
 * .env, bunfig or auto-install, talking on SANDBOX_FDS.control. Its env is its own (the
 * workload's travels on the control socket).
 */
export function sandboxInitCommand(): { argv: string[]; env: Record<string, string> } {
  const flags = ["--no-env-file", "--config=/dev/null", "--no-install"];
  return { argv: [process.execPath, ...flags, SANDBOX_INIT_PATH, "init", String(SANDBOX_FDS.control)], env: { BUN_BE_BUN: "1" } };
}

/**
 * `launch` becomes what is spawned. Linux: bwrap with `init` as its command and env (the
 * workload itself travels over SANDBOX_FDS.control, never in argv: its env may hold secrets).
 * macOS: sandbox-exec in front of the workload, same env.
 */
export function sandboxLaunch(launch: Launch, view: SandboxView, tool: string, init: { argv: string[]; env: Record<string, string> }): Launch {
  if (isMacOS) {
    // sandbox-exec execvp's its first argument, so argv[0] becomes the program's path.
    return { program: tool, argv: ["sandbox-exec", "-p", sandboxProfile(view, launch), launch.program, ...launch.argv.slice(1)], env: launch.env };
  }
  const script = ["--perms", "0444", "--file", String(SANDBOX_FDS.init), SANDBOX_INIT_PATH];
  return { program: tool, argv: ["bwrap", ...bwrapArguments(view), ...script, "--", ...init.argv], env: init.env };
}
