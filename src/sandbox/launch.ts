/**
 * The one transformation that puts a workload in the sandbox: its launch (program, argv, env)
 * becomes what is spawned. Linux process tree: wrapper → bwrap (its monitor) → bwrap's init,
 * pid 1 of a new pid namespace (reaps orphans) → this runtime's sandbox init (init.ts), which
 * starts the workload and reports its exact wait status, something bwrap cannot (it turns a
 * death by signal n into status 128+n, on its exit and on --json-status-fd alike). macOS
 * (unverified here): sandbox-exec in front of the workload.
 */
import { identityOf } from "../platform/directory.ts";
import { isMacOS } from "../platform/os.ts";
import { bwrapArguments } from "./bwrap.ts";
import { SANDBOX_FDS, SANDBOX_INIT_PATH, type SandboxRequest } from "./init-protocol.ts";
import { keptInPlace } from "./mount-plan.ts";
import { EGRESS_PORT, EGRESS_SOCKET } from "./network/egress-plan.ts";
import { proxyEnvironment } from "./network/proxy-env.ts";
import { seatbeltLaunch } from "./seatbelt.ts";
import type { Launch, SandboxView } from "./view.ts";
import { bundledInit } from "./init-bundle.ts" with { type: "macro" };

/** init.ts bundled with what it imports (at build time: init-bundle.ts), which bwrap copies into the sandbox at SANDBOX_INIT_PATH. */
export const SANDBOX_INIT_SOURCE: string = bundledInit();

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
 * macOS: sandbox-exec in front of the workload, same env; under an allowlist, `egressPort` is
 * the policy proxy's port on loopback, the profile's one way out and the proxy variables' port.
 */
export function sandboxLaunch(launch: Launch, view: SandboxView, tool: string, init: { argv: string[]; env: Record<string, string> }, egressPort: number | null = null): Launch {
  if (isMacOS) return seatbeltLaunch(launch, view, tool, egressPort);
  const script = ["--perms", "0444", "--file", String(SANDBOX_FDS.init), SANDBOX_INIT_PATH];
  return { program: tool, argv: ["bwrap", ...bwrapArguments(view), ...script, "--", ...init.argv], env: init.env };
}

/**
 * What the sandbox init is asked to run (init-protocol.ts): the workload, in the checked
 * directory `cwd` (its path and a descriptor of it), the binds of `view` it checks again inside,
 * and under a network allowlist the port it forwards to the proxy, the proxy variables added to
 * the workload's environment (their one exception to the exact environment).
 */
export function sandboxRequest(launch: Launch, mode: SandboxRequest["mode"], view: SandboxView, cwd: { path: string; fd: number }, egress: boolean): SandboxRequest {
  const stdio = mode === "pipes" ? ([SANDBOX_FDS.stdin, SANDBOX_FDS.stdout, SANDBOX_FDS.stderr] as [number, number, number]) : null;
  const env = egress ? { ...launch.env, ...proxyEnvironment(EGRESS_PORT) } : launch.env;
  const forward = egress ? { port: EGRESS_PORT, socket: EGRESS_SOCKET } : null;
  return { type: "run", mode, program: launch.program, argv: launch.argv, env, cwd: cwd.path, cwdIdentity: identityOf(cwd.fd), pinned: keptInPlace(view), stdio, egress: forward };
}

/**
 * bwrap's descriptors, index = number in bwrap (SANDBOX_FDS): the control pipe, the root
 * directory (none for a view without one), the init's script, and in pipes mode the workload's
 * fds 0–2 (`workload`: for the init alone; bwrap's own stdio is /dev/null and a pipe for its
 * messages). A PTY leaves 0–2 bwrap's: the terminal.
 */
export function bwrapDescriptors(root: number | null, script: number, workload: readonly number[] | null): ("inherit" | "ignore" | "pipe" | number)[] {
  const rooted = root ?? "ignore";
  return workload === null ? ["inherit", "inherit", "inherit", "pipe", rooted, script] : ["ignore", "ignore", "pipe", "pipe", rooted, script, ...workload];
}
