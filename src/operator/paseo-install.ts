/**
 * The workspace helper of a Paseo daemon installed on this machine, for doctor to offer when no
 * helper is found. The helper is Paseo's package `@getpaseo/workspace-helper` (bin
 * `paseo-workspace-helper` → `dist/executable.mjs`, a single file that needs only Node's
 * built-ins), a dependency of the daemon's packages. Where an npm installation of the daemon
 * holds it is an assumption written down in docs/helper-install.md ("The helper of a Paseo
 * daemon installed here"): in a `node_modules/@getpaseo/workspace-helper` at or above the
 * directory of the `paseo` executable's real path, or nested under `@getpaseo/server` there.
 * PASEO_DAEMON_INSTALL names other installations to look in (colon-separated directories).
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { HELPER_NAME } from "../exec/helper.ts";
import { PATH_UNRESOLVABLE, tolerating } from "../platform/errno.ts";
import { realPathIfResolvable, statOrNull } from "../platform/lookup.ts";

export const HELPER_PACKAGE = "@getpaseo/workspace-helper";
/** How many directories above `paseo`'s real path are looked at (bin/, dist/, the package, @scope, node_modules, lib/). */
const LEVELS = 8;

/** A helper found in a daemon's installation. */
export interface DaemonHelper {
  /** The helper's executable (the package's bin), real path. */
  path: string;
  version: string;
  /** Where it was found from: the `paseo` executable, or PASEO_DAEMON_INSTALL. */
  from: string;
}

/** The package directories a daemon installation under `dir` may hold the helper in. */
function candidatesIn(dir: string): string[] {
  return [dir, join(dir, "node_modules", HELPER_PACKAGE), join(dir, "node_modules", "@getpaseo", "server", "node_modules", HELPER_PACKAGE)];
}

/** The helper package at `dir` (its name, and a bin that exists), or null. */
function helperPackageAt(dir: string, from: string): DaemonHelper | null {
  // Missing, out of reach or a directory: not a helper this user's daemon could run either.
  const text = tolerating([...PATH_UNRESOLVABLE, "EISDIR"], null, () => readFileSync(join(dir, "package.json"), "utf8"));
  if (text === null) return null;
  let parsed: { name?: unknown; version?: unknown; bin?: unknown } | null;
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch (error) {
    // Not JSON: not the helper package, whatever else it is.
    if (error instanceof SyntaxError) return null;
    throw error;
  }
  if (parsed?.name !== HELPER_PACKAGE) return null;
  const bin = typeof parsed.bin === "string" ? parsed.bin : (parsed.bin as Record<string, unknown> | undefined)?.[HELPER_NAME];
  if (typeof bin !== "string") return null;
  const path = join(dir, bin);
  const real = realPathIfResolvable(path);
  if (real === null || statOrNull(real)?.isFile() !== true) return null;
  return { path: real, version: typeof parsed.version === "string" ? parsed.version : "unknown version", from };
}

/** Each directory from `start` up, at most LEVELS of them. */
function upFrom(start: string): string[] {
  const dirs: string[] = [];
  for (let dir = start; dirs.length < LEVELS; dir = dirname(dir)) {
    dirs.push(dir);
    if (dir === dirname(dir)) break;
  }
  return dirs;
}

/** The installations to look in: PASEO_DAEMON_INSTALL's directories, else the one `paseo` on PATH runs from. */
function installations(env: NodeJS.ProcessEnv): { dirs: string[]; from: string }[] {
  const given = (env.PASEO_DAEMON_INSTALL ?? "").split(":").filter((dir) => dir !== "");
  if (given.length > 0) return given.map((dir) => ({ dirs: upFrom(dir), from: `PASEO_DAEMON_INSTALL (${dir})` }));
  const paseo = Bun.which("paseo", { PATH: env.PATH ?? "" });
  if (paseo === null) return [];
  const real = realPathIfResolvable(paseo);
  return real === null ? [] : [{ dirs: upFrom(dirname(real)), from: `the Paseo daemon's installation (${paseo} → ${real})` }];
}

/** The helper of a Paseo daemon installed here, or null when none is found. */
export function daemonHelper(env: NodeJS.ProcessEnv = process.env): DaemonHelper | null {
  for (const { dirs, from } of installations(env)) {
    for (const dir of dirs) {
      for (const candidate of candidatesIn(dir)) {
        const found = helperPackageAt(candidate, from);
        if (found !== null) return found;
      }
    }
  }
  return null;
}
