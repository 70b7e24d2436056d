/**
 * Finding `paseo-workspace-helper` for helper workloads. The daemon runs it with env `{}`, so
 * there is no PATH to search; the runtime looks in a fixed, documented order instead (the
 * later dialect adds the host's PATH at the end).
 */
import { closeSync, existsSync, openSync, readSync } from "node:fs";
import { hasErrno, NO_ACCESS, PATH_MISSING } from "../platform/errno.ts";
import { realPathOrNull } from "../platform/lookup.ts";
import { basename, dirname, isAbsolute, join } from "node:path";
import { ProgramError, resolveProgram, statProgram } from "./program.ts";

/** The helper's default name (the daemon's default helperCommand). */
export const HELPER_NAME = "paseo-workspace-helper";

/**
 * Flags for the runtime's embedded Bun when it runs a JavaScript helper: no `.env`, no
 * `bunfig.toml` (its preload would run workspace code) and no auto-install.
 */
const EMBEDDED_BUN_FLAGS = ["--no-env-file", "--config=/dev/null", "--no-install"];

/** Where a helper was found, for launching and for `doctor`. */
export interface HelperResolution {
  path: string;
  /** "PATH", "options.helperPath", "runtime directory" or "host PATH". */
  source: string;
  /** True when it is JavaScript run by the runtime's embedded engine. */
  javascript: boolean;
}

/**
 * Resolves a bare helper argv[0]: envelope PATH, options.helperPath, beside this executable,
 * then `hostPath` when given (the later dialect: the helper must be on the host's PATH).
 */
export function resolveHelper(program: string, env: Record<string, string>, cwd: string, helperPath: string | undefined, hostPath?: string): HelperResolution {
  const looked: string[] = [];
  const found = (path: string, source: string): HelperResolution => ({ path, source, javascript: isJavaScript(path) });
  if (env.PATH) {
    const path = lookFor(() => resolveProgram(program, env, cwd));
    if (typeof path === "string") return found(path, "PATH");
    looked.push(`PATH=${env.PATH}`);
  } else looked.push("the envelope env (no PATH)");
  const configured = helperPath;
  if (configured !== undefined) {
    const path = lookFor(() => checkHelperFile(configured, cwd));
    if (typeof path === "string") return found(path, "options.helperPath");
    looked.push(`options.helperPath=${configured} (${path.message})`);
  } else looked.push("options.helperPath (not set)");
  const besideRuntime = join(dirname(process.execPath), basename(program));
  const beside = lookFor(() => checkHelperFile(besideRuntime, cwd));
  if (typeof beside === "string") return found(beside, "runtime directory");
  looked.push(besideRuntime);
  // Only absolute entries: a relative one ("." or empty) would find a file of the workspace itself.
  const hostDirs = hostPath?.split(":").filter((dir) => isAbsolute(dir)).join(":");
  if (hostDirs) {
    const path = lookFor(() => resolveProgram(program, { PATH: hostDirs }, cwd));
    if (typeof path === "string") return found(path, "host PATH");
    looked.push(`the host PATH=${hostDirs}`);
  }
  throw new ProgramError(`workspace helper ${JSON.stringify(program)} not found; looked in: ${looked.join("; ")}`, 127);
}

/** The path `find` resolves, or the ProgramError it refused with (not found, not executable): the next place is tried. Anything else is thrown. */
function lookFor(find: () => string): string | ProgramError {
  try {
    return find();
  } catch (error) {
    if (error instanceof ProgramError) return error;
    throw error;
  }
}

/** An absolute helper path: a JavaScript file only needs to be readable, others executable. */
function checkHelperFile(path: string, cwd: string): string {
  const stat = statProgram(path, path);
  if (stat === null) throw new ProgramError(`${path} does not exist`, 127);
  if (stat.isFile() && isJavaScript(path)) return path;
  return resolveProgram(path, {}, cwd);
}

/** `.js`/`.mjs`/`.cjs`, or a `#!` line naming node. */
function isJavaScript(path: string): boolean {
  if (/\.(c|m)?js$/.test(path)) return true;
  const head = Buffer.alloc(128);
  let fd = -1;
  try {
    fd = openSync(path, "r");
    const n = readSync(fd, head, 0, head.length, 0);
    const line = head.subarray(0, n).toString("latin1").split("\n")[0]!;
    return line.startsWith("#!") && /\bnode(js)?\b/.test(line);
  } catch (error) {
    // Execute-only (a native program we may not read), or gone since it was found: not a script.
    if (hasErrno(error, [...NO_ACCESS, ...PATH_MISSING])) return false;
    throw error;
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

/**
 * How to launch a resolved helper: natively, or as a script of the runtime's own embedded Bun
 * (`BUN_BE_BUN=1` is the one variable added to the helper's env for that).
 */
export function helperLaunch(helper: HelperResolution, argv: readonly string[], env: Record<string, string>) {
  if (!helper.javascript) return { program: helper.path, argv: [...argv], env };
  return {
    program: process.execPath,
    argv: [argv[0]!, ...EMBEDDED_BUN_FLAGS, helper.path, ...argv.slice(1)],
    env: { ...env, BUN_BE_BUN: "1" },
  };
}

/**
 * What a helper needs to see under the sandbox besides its own file: for JavaScript, its
 * package directory (the nearest holding a package.json) and every `node_modules` directory
 * above it, where its imports are resolved (an npm `bin` symlink into
 * node_modules/@getpaseo/workspace-helper/dist/ finds its dependencies there, hoisted or
 * not). A native helper or a wrapper script: only itself (doctor --config says what else it needs).
 */
export function helperFiles(helper: HelperResolution): string[] {
  if (!helper.javascript) return [helper.path];
  const real = realPathOrNull(helper.path);
  if (real === null) return [helper.path];
  const packageDir = packageDirectoryOf(real);
  if (packageDir === null) return [helper.path];
  // Outermost first: a directory shown makes the paths below it visible (filesToShow).
  const out = [packageDir, helper.path];
  for (let dir = packageDir; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, "node_modules"))) out.unshift(join(dir, "node_modules"));
  return out;
}

/** The nearest directory above `path` that holds a package.json (the package `path` belongs to), or null. */
export function packageDirectoryOf(path: string): string | null {
  for (let dir = dirname(path); dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, "package.json"))) return dir;
  return null;
}

/** For `doctor`: where the default helper would come from with the daemon's empty env. */
export function describeHelperResolution(helperPath: string | undefined): HelperResolution {
  return resolveHelper(HELPER_NAME, {}, "/", helperPath);
}
