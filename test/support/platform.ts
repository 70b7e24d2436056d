/**
 * The one place a test asks whether it can run on this platform. Most of the suite needs Linux
 * facilities that macOS lacks (/proc, cgroup v2, bubblewrap, setpriv, tmpfs mounts, pidfds, the
 * tests' own sshd, qemu); such a test or block is `test.skipIf(linuxOnly(WHAT))` /
 * `describe.skipIf(linuxOnly(WHAT))`, decided when the file loads, and its skip says why on
 * stderr: a skip is never a pass. (Tools that may be missing on Linux too: tools.ts.)
 */

/** Whether this machine runs Linux. */
export const IS_LINUX = process.platform === "linux";

const said = new Set<string>();

/**
 * True when not on Linux, after printing `skipped: WHAT: needs Linux (NEED), this is PLATFORM`
 * once per WHAT. `what` names the file and the tests; `need` what of Linux they use.
 */
export function linuxOnly(what: string, need: string): boolean {
  if (IS_LINUX) return false;
  if (!said.has(what)) {
    said.add(what);
    console.warn(`skipped: ${what}: needs Linux (${need}); this is ${process.platform}`);
  }
  return true;
}
