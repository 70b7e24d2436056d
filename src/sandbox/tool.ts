/**
 * The sandbox tool: finding it, proving it starts, and saying why it does not. Linux: bubblewrap
 * (`bwrap`, distribution package `bubblewrap`), never home-made namespaces. macOS (unverified
 * here): `sandbox-exec`.
 */
import { existsSync } from "node:fs";
import { lazyChildProcess } from "../platform/lazy.ts";
import { isMacOS } from "../platform/os.ts";
import { BWRAP_PACKAGE, bwrapArguments } from "./bwrap.ts";
import type { SandboxOptions } from "./settings.ts";

/** Why the sandbox cannot be used; create, resume and exec refuse with this message. */
export class SandboxUnavailable extends Error {}

/**
 * The sysctls that decide whether bwrap may create namespaces for a user other than root.
 * Named in every refusal, since "no permission" is what their defaults look like.
 */
const USERNS_HINT =
  "for a daemon not running as root bwrap needs unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1 (Debian, older Ubuntu), " +
  "user.max_user_namespaces above 0, and on Ubuntu 23.10 or later kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile that allows bwrap)";

/**
 * The sandbox tool: bwrap found on the runtime's PATH (the daemon's environment, like git),
 * or macOS's sandbox-exec. Throws SandboxUnavailable naming the package to install.
 */
export function sandboxTool(): string {
  if (isMacOS) {
    if (existsSync("/usr/bin/sandbox-exec")) return "/usr/bin/sandbox-exec";
    throw new SandboxUnavailable('isolation "sandbox" needs /usr/bin/sandbox-exec, which this macOS does not have; nothing was run');
  }
  const path = process.env.PATH ?? "";
  const found = Bun.which("bwrap", { PATH: path });
  if (found) return found;
  throw new SandboxUnavailable(
    `isolation "sandbox" needs bubblewrap, and bwrap is not on the runtime's PATH (${path || "unset"}): install the package ${BWRAP_PACKAGE} ` +
      `(apt-get install ${BWRAP_PACKAGE}, dnf install ${BWRAP_PACKAGE}); ${USERNS_HINT}; nothing was run`,
  );
}

/**
 * A sandbox that did not start, in bwrap's own words, with the usual cause spelled out (in PTY
 * mode bwrap's words went to the terminal, and only its exit status is known here).
 */
export function explainSandboxFailure(detail: string): string {
  return `the sandbox did not start (${BWRAP_PACKAGE}: ${detail.trim() || "no message"}); ${USERNS_HINT}`;
}

/**
 * Starts a sandboxed /bin/true with the same namespaces a workload of `settings` gets: null when
 * that works, else why not (bwrap missing, or its namespaces refused). What `doctor`, create and
 * resume run.
 */
export function probeSandbox(settings: Pick<SandboxOptions, "network">): string | null {
  let tool: string;
  try {
    tool = sandboxTool();
  } catch (error) {
    if (!(error instanceof SandboxUnavailable)) throw error;
    return error.message;
  }
  const argv =
    isMacOS
      ? [tool, "-p", "(version 1)(allow default)", "/usr/bin/true"]
      : [tool, ...bwrapArguments({ root: null, readWrite: [], readOnly: [], network: settings.network }), "--", "/bin/true"];
  const result = lazyChildProcess().spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", env: {}, timeout: 10_000, stdio: ["ignore", "ignore", "pipe"] });
  if (result.status === 0) return null;
  const detail = result.error?.message ?? (result.stderr || `exit status ${result.status ?? result.signal}`);
  return `isolation "sandbox": ${explainSandboxFailure(detail)}; nothing was run`;
}

/** For create and resume under isolation "sandbox": throws SandboxUnavailable unless a sandboxed /bin/true runs. */
export function requireSandbox(settings: Pick<SandboxOptions, "network">): void {
  const problem = probeSandbox(settings);
  if (problem !== null) throw new SandboxUnavailable(problem);
}
