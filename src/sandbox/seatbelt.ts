/**
 * The view (view.ts) rendered as a Seatbelt profile for macOS's sandbox-exec (unverified here).
 * Seatbelt has no mounts, so nothing of the mount plan applies: the same paths become allow and
 * deny rules over the host's own tree.
 */
import { sep } from "node:path";
import { lazyOs } from "../platform/lazy.ts";
import { covered, type Launch, type SandboxView } from "./view.ts";

/**
 * macOS (unverified here): a Seatbelt profile that allows everything except writes outside the
 * workspace (and the view's read-write paths, and the terminal and null devices) and reads of
 * the daemon user's home other than the workspace and what the launch needs. Last match wins
 * in SBPL, so the exceptions come after the denials. Ancestors of allowed paths keep their
 * metadata readable, or path lookups (realpath, getcwd) beneath the home would fail.
 */
export function sandboxProfile(view: SandboxView, launch: Launch): string {
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
  // An allowlist is refused on macOS before a profile is made (sandboxed-workload.ts): no network namespace, no construction.
  if (view.network !== "host") lines.push("(deny network*)");
  return lines.join("\n");
}

function ancestorsOf(path: string): string[] {
  const out: string[] = [];
  for (let dir = path.slice(0, path.lastIndexOf(sep)); dir.length > 0; dir = dir.slice(0, dir.lastIndexOf(sep))) out.push(dir);
  return out;
}
