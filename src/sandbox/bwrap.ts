/**
 * The mount plan (mount-plan.ts) rendered as bubblewrap's options: bwrap is mechanism only,
 * what it binds is the plan's. Linux only (macOS: seatbelt.ts).
 */
import type { SetupStep } from "./mount-plan.ts";
import { mountPlan } from "./mount-plan.ts";
import type { SandboxView } from "./view.ts";

/** The package that brings bwrap on Debian, Ubuntu, Fedora, Arch and Alpine alike. */
export const BWRAP_PACKAGE = "bubblewrap";

/**
 * bwrap's options for `view`, then its mounts in plan order:
 * - `--die-with-parent`: SIGKILL for the sandbox when the wrapper dies (bwrap sets it on its
 *   monitor, its init and the command).
 * - `--unshare-pid`: its own pid namespace, so no host process is visible; bwrap's init is
 *   pid 1 and reaps orphans. `--unshare-ipc`: no host SysV IPC or POSIX message queues.
 *   `--unshare-net` with any network but "host": only a loopback interface of its own (an
 *   allowlist reaches the proxy through a socket shown inside, network/egress.ts).
 * - `--cap-drop ALL`: when the daemon runs as root, bwrap would otherwise leave the command
 *   its capabilities (uid 0 stays, but with no capability and no way to regain one).
 * - `--chdir /`: bwrap's own working directory inside; the init starts the workload in the
 *   checked directory itself.
 */
export function bwrapArguments(view: SandboxView): string[] {
  const args = ["--die-with-parent", "--unshare-pid", "--unshare-ipc"];
  if (view.network !== "host") args.push("--unshare-net");
  args.push("--cap-drop", "ALL", "--chdir", "/");
  for (const step of mountPlan(view)) args.push(...bwrapStep(step));
  return args;
}

/** One setup operation as bwrap's option. */
function bwrapStep(step: SetupStep): string[] {
  switch (step.op) {
    case "proc":
    case "dev":
    case "tmpfs":
      return [`--${step.op}`, step.target];
    case "bind":
      return [step.writable ? "--bind" : "--ro-bind", step.source, step.target];
    case "bind-fd":
      return ["--bind-fd", String(step.fd), step.target];
    case "symlink":
      return ["--symlink", step.link, step.target];
  }
}
