/** A plain recursive copy of a host directory that is not a git repository. */
import { chmodSync, constants, copyFileSync, lstatSync, mkdirSync, readdirSync, readlinkSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { diagnose } from "../output.ts";

/**
 * Copies `from` into the new directory `to`. Never follows a symlink: links are recreated as
 * links (so nothing outside the source is ever read); sockets, FIFOs and devices are skipped.
 */
export function copyTree(from: string, to: string): void {
  const stat = lstatSync(from);
  mkdirSync(to, { mode: 0o700 });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) copyTree(source, target);
    else if (entry.isFile()) copyFileSync(source, target, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
    else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else diagnose(`not copying ${source}: not a regular file, directory or symlink`);
  }
  chmodSync(to, stat.mode & 0o7777);
}
