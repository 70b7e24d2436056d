/**
 * A path looked up when it may not be there: its real path, stat or lstat, or null when it is
 * missing (PATH_MISSING). Any other failure (EACCES, ELOOP…) is thrown: "cannot be looked at"
 * is not "not there". Only a caller for which both mean "nothing to follow" asks
 * realPathIfResolvable.
 */
import { lstatSync, realpathSync, statSync, type Stats } from "node:fs";
import { PATH_MISSING, PATH_UNRESOLVABLE, tolerating } from "./errno.ts";

/** realpath(3) of `path`, or null when it (or a directory on the way) is missing. */
export function realPathOrNull(path: string): string | null {
  return tolerating(PATH_MISSING, null, () => realpathSync(path));
}

/** realpath(3) of `path`, or null when it leads nowhere this process can follow (PATH_UNRESOLVABLE: missing, a loop, unsearchable). */
export function realPathIfResolvable(path: string): string | null {
  return tolerating(PATH_UNRESOLVABLE, null, () => realpathSync(path));
}

/** stat(2) of `path` (through a symlink), or null when it is missing, a dangling symlink included. */
export function statOrNull(path: string): Stats | null {
  return tolerating(PATH_MISSING, null, () => statSync(path));
}

/** lstat(2) of `path` (the symlink itself), or null when it is missing. */
export function lstatOrNull(path: string): Stats | null {
  return tolerating(PATH_MISSING, null, () => lstatSync(path));
}
