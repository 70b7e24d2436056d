/**
 * The view (view.ts) rendered as a Seatbelt profile for macOS's sandbox-exec (unverified here).
 * Seatbelt has no mounts, so nothing of the mount plan applies: the same paths become allow and
 * deny rules over the host's own tree.
 */
import { sep } from "node:path";
import { lazyOs } from "../platform/lazy.ts";
import { proxyEnvironment } from "./network/proxy-env.ts";
import { isAllowlist } from "./settings.ts";
import { covered, type Launch, type SandboxView } from "./view.ts";

/**
 * macOS (unverified here): a Seatbelt profile that allows everything except writes outside the
 * workspace (and the view's read-write paths, and the terminal and null devices) and reads of
 * the daemon user's home other than the workspace and what the launch needs. Last match wins
 * in SBPL, so the exceptions come after the denials. Ancestors of allowed paths keep their
 * metadata readable, or path lookups (realpath, getcwd) beneath the home would fail.
 * `egressPort`: under a network allowlist, the policy proxy's port on the host's loopback.
 */
export function sandboxProfile(view: SandboxView, launch: Launch, egressPort: number | null = null): string {
  const home = lazyOs().homedir();
  const quote = (path: string) => `"${path.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
  const subpaths = (paths: readonly string[]) => paths.map((path) => `(subpath ${quote(path)})`).join(" ");
  const writable = [...(view.root === null ? [] : [view.root]), ...view.readWrite];
  const readableInHome = [...writable, ...view.readOnly, launch.program];
  const ancestors = [...new Set(readableInHome.flatMap(ancestorsOf))];
  const lines = [
    "(version 1)",
    "(allow default)",
    "(deny file-write*)",
    `(allow file-write* ${subpaths(writable)} (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper") (regex #"^/dev/ttys[0-9]+$") (literal "/dev/tty") (regex #"^/dev/fd/"))`,
    `(deny file-read* (subpath ${quote(home)}))`,
    `(allow file-read* ${subpaths(readableInHome)})`,
  ];
  // Hidden directories (the runtime's home): denied, but for the root inside one (a worktree's checkout).
  for (const dir of view.hidden ?? []) {
    lines.push(`(deny file-read* file-write* (subpath ${quote(dir)}))`);
    if (view.root !== null && covered(view.root, [dir])) lines.push(`(allow file-read* file-write* (subpath ${quote(view.root)}))`);
  }
  if (ancestors.length > 0) lines.push(`(allow file-read-metadata ${ancestors.map((path) => `(literal ${quote(path)})`).join(" ")})`);
  // Seatbelt cannot show a path somewhere else: only overlays in place, as allow or deny rules.
  for (const overlay of (view.overlays ?? []).filter((entry) => entry.source === entry.target)) {
    lines.push(`(${overlay.writable ? "allow" : "deny"} file-write* (subpath ${quote(overlay.source)}))`);
  }
  lines.push(...networkRules(view.network, egressPort));
  return lines.join("\n");
}

/**
 * The network by what is allowed: "host" adds nothing; "none" denies every network operation
 * (DNS included: mDNSResponder is reached through a socket, which network-outbound covers);
 * an allowlist denies the same and then allows one destination, the policy proxy's port on
 * loopback. Last match wins, so the one allow comes after the denial.
 */
function networkRules(network: SandboxView["network"], egressPort: number | null): string[] {
  if (network === "host") return [];
  if (!isAllowlist(network)) return ["(deny network*)"];
  if (egressPort === null || !Number.isInteger(egressPort) || egressPort < 1 || egressPort > 65535) throw new Error("a network allowlist needs the policy proxy's port in the Seatbelt profile");
  return ["(deny network*)", `(allow network-outbound (remote ip "localhost:${egressPort}"))`];
}

/**
 * sandbox-exec in front of the workload, same env; under an allowlist the proxy variables name
 * `egressPort`, the policy proxy's port on loopback and the profile's one way out.
 * sandbox-exec execvp's its first argument, so argv[0] becomes the program's path.
 */
export function seatbeltLaunch(launch: Launch, view: SandboxView, tool: string, egressPort: number | null): Launch {
  const env = egressPort === null ? launch.env : { ...launch.env, ...proxyEnvironment(egressPort) };
  return { program: tool, argv: ["sandbox-exec", "-p", sandboxProfile(view, launch, egressPort), launch.program, ...launch.argv.slice(1)], env };
}

function ancestorsOf(path: string): string[] {
  const out: string[] = [];
  for (let dir = path.slice(0, path.lastIndexOf(sep)); dir.length > 0; dir = dir.slice(0, dir.lastIndexOf(sep))) out.push(dir);
  return out;
}
