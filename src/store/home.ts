import { lstatSync, mkdirSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { lazyOs } from "../platform/lazy.ts";

/** The options that select a runtime home (options.ts has validated them). */
export interface HomeOptions {
  stateDirectory?: string | undefined;
}

/** The runtime home: where the store and every owned workspace live. */
export function resolveHome(options: HomeOptions, env = process.env): string {
  if (options.stateDirectory !== undefined) return options.stateDirectory;
  if (env.PASEO_HOST_RUNTIME_HOME) return requireAbsolute(env.PASEO_HOST_RUNTIME_HOME, "PASEO_HOST_RUNTIME_HOME");
  if (env.XDG_STATE_HOME) return join(requireAbsolute(env.XDG_STATE_HOME, "XDG_STATE_HOME"), "paseo-host-runtime");
  const home = env.HOME || lazyOs().homedir();
  if (process.platform === "darwin") return join(home, "Library", "Application Support", "paseo-host-runtime");
  return join(home, ".local", "state", "paseo-host-runtime");
}

function requireAbsolute(path: string, name: string): string {
  if (!isAbsolute(path)) throw new Error(`${name} must be an absolute path, got ${JSON.stringify(path)}`);
  return path;
}

/**
 * Creates the home (mode 0700) when missing and refuses one another user could tamper with:
 * the store decides which processes get signalled and which directories get deleted.
 */
export function ensureHome(home: string): string {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  checkHome(home);
  return home;
}

/** Throws when `home` is not a directory owned by us and closed to group and others. */
export function checkHome(home: string): void {
  checkPrivateDirectory(home, "runtime home");
}

/**
 * Throws when `path` (named `what` in the message) is not a real directory owned by this user,
 * closed to group and others: the same rule for the home and for what the runtime makes in it.
 */
export function checkPrivateDirectory(path: string, what: string): void {
  const stat = lstatSync(path);
  if (!stat.isDirectory()) throw new Error(`${what} ${path} is not a directory`);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    throw new Error(`${what} ${path} is owned by uid ${stat.uid}, not by this user (uid ${uid}); refusing to use it`);
  }
  if ((stat.mode & 0o022) !== 0) {
    const mode = (stat.mode & 0o777).toString(8);
    throw new Error(`${what} ${path} is group- or world-writable (mode ${mode}); fix it with: chmod 700 ${path}`);
  }
}
