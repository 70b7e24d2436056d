/**
 * The one place a test says it cannot run here, and why. A test or block that needs what this
 * machine may lack is `test.skipIf(COND)` / `describe.skipIf(COND)`, COND from here (or from
 * tools.ts, for a missing tool, which reports through skipBecause too), decided when the file
 * loads. Each condition that holds prints `skipped: WHAT: WHY` on stderr once, so a green run
 * names everything it did not run: a skip is never a pass, and a test never returns early
 * instead. Most of the suite needs Linux facilities that macOS lacks (/proc, cgroup v2,
 * bubblewrap, setpriv, tmpfs mounts, pidfds, the tests' own sshd, qemu).
 */
import { release } from "node:os";
import { CGROUP_UNAVAILABLE } from "../../kit/cgroup.ts";

/** Whether this machine runs Linux. */
export const IS_LINUX = process.platform === "linux";

const said = new Set<string>();

/**
 * True when `reason` is not null, after printing `skipped: WHAT: REASON` once per WHAT. `what`
 * names the file and the tests (`pty.test.ts, the sandboxed half`), `reason` what is missing.
 */
export function skipBecause(what: string, reason: string | null): boolean {
  if (reason === null) return false;
  if (!said.has(what)) {
    said.add(what);
    console.warn(`skipped: ${what}: ${reason}`);
  }
  return true;
}

/** True when not on Linux; `need` says what of Linux the tests use. */
export function linuxOnly(what: string, need: string): boolean {
  return skipBecause(what, IS_LINUX ? null : `needs Linux (${need}); this is ${process.platform}`);
}

/** This Linux kernel's [major, minor] ([0, 0] elsewhere). */
const KERNEL = (IS_LINUX ? release() : "0.0").split(".", 2).map((part) => Number.parseInt(part, 10) || 0) as [number, number];

/** True on Linux older than `version` (MAJOR.MINOR), where `feature` is missing, and off Linux. */
export function kernelBefore(what: string, version: string, feature: string): boolean {
  const [major, minor] = version.split(".").map(Number) as [number, number];
  if (!IS_LINUX) return linuxOnly(what, `${feature}, Linux ${version}`);
  const older = KERNEL[0] < major || (KERNEL[0] === major && KERNEL[1] < minor);
  return skipBecause(what, older ? `needs Linux ${version} or newer (${feature}); this kernel is ${release()}` : null);
}

/**
 * Process-group containment proves a group whose leader was reaped through a pidfd of that
 * leader (pidfd_send_signal with PIDFD_SIGNAL_PROCESS_GROUP, Linux 6.9). Older kernels leave
 * such leftovers alone, by design: the tests that expect them ended skip there.
 */
export function withoutGroupPidfd(what: string): boolean {
  return kernelBefore(what, "6.9", "pidfd_send_signal to a process group");
}

/** True unless this process runs as root; `why` says what needs it. */
export function withoutRoot(what: string, why: string): boolean {
  return skipBecause(what, process.getuid?.() === 0 ? null : `needs root (${why}); this runs as uid ${process.getuid?.()}`);
}

/** True where this host has no usable cgroup v2 hierarchy (kit/cgroup.ts says why). */
export function withoutCgroups(what: string): boolean {
  return skipBecause(what, CGROUP_UNAVAILABLE);
}

/** True unless PASEO_STRESS=1: a loop too long for every run. */
export function stressOnly(what: string): boolean {
  return skipBecause(what, process.env.PASEO_STRESS === "1" ? null : "a stress run: set PASEO_STRESS=1");
}
