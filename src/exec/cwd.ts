import { realpathSync, statSync } from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";

/**
 * Resolves the envelope's workspace-relative cwd to a real directory inside `root`.
 * Done once, before launch: absolute paths, NUL bytes, `..` escapes and symlinks that
 * leave the workspace are all refused.
 */
export function confineCwd(root: string, cwd: string | undefined): string {
  const realRoot = realpathSync(root);
  if (cwd === undefined || cwd === "" || cwd === ".") return realRoot;
  if (cwd.includes("\0")) throw new Error("cwd must not contain a NUL byte");
  if (isAbsolute(cwd)) throw new Error(`cwd ${JSON.stringify(cwd)} must be relative to the workspace root`);
  const wanted = resolve(realRoot, cwd);
  if (!isInside(realRoot, wanted)) throw new Error(`cwd ${JSON.stringify(cwd)} escapes the workspace`);
  let real: string;
  try {
    real = realpathSync(wanted);
  } catch {
    throw new Error(`cwd ${JSON.stringify(cwd)} does not exist in the workspace`);
  }
  if (!isInside(realRoot, real)) throw new Error(`cwd ${JSON.stringify(cwd)} escapes the workspace through a symlink`);
  if (!statSync(real).isDirectory()) throw new Error(`cwd ${JSON.stringify(cwd)} is not a directory`);
  return real;
}

/** True when `path` is `root` or below it (both absolute and normalized). */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}
