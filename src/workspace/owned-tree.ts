/**
 * Removing a directory tree the runtime owns, on its own filesystem only
 * (platform/remove-tree.ts), and saying exactly what had to be left and what to do about it.
 */
import { diagnose } from "../output.ts";
import { isComplete, removeTree, type Leftovers } from "../platform/remove-tree.ts";
import { shellQuote } from "../shell-quote.ts";

/** What a removal could not finish: a mount point it never crossed, or an entry that would not go. */
export class UnfinishedRemoval extends Error {
  override name = "UnfinishedRemoval";
}

/** Removes a tree of the runtime's own (see platform/remove-tree.ts), or throws UnfinishedRemoval saying what is left and what to do. */
export function removeOwnedTree(path: string): void {
  const left = removeTree(path);
  if (!isComplete(left)) throw new UnfinishedRemoval(leftoversMessage(path, left));
}

/** At most this many leftovers are named in a message. */
const NAMED = 5;

function leftoversMessage(path: string, left: Leftovers): string {
  const named = (items: string[]) => items.slice(0, NAMED).join(", ") + (items.length > NAMED ? ` and ${items.length - NAMED} more` : "");
  const parts: string[] = [];
  const mounts = left.mountPoints.map(shellQuote);
  if (mounts.length === 1) parts.push(`${mounts[0]} is a mount point (another filesystem or a bind mount), left untouched with all it holds: unmount it (umount ${mounts[0]})`);
  else if (mounts.length > 1) parts.push(`${named(mounts)} are mount points (other filesystems or bind mounts), left untouched with all they hold: unmount them (umount ${mounts.slice(0, NAMED).join(" ")})`);
  const failures = left.failures.map(({ path, code }) => `${shellQuote(path)} (${code})`);
  if (failures.length) parts.push(`could not remove ${named(failures)}: make ${failures.length === 1 ? "it" : "them"} removable (EPERM is most often an immutable or append-only file: lsattr shows it, chattr -i -a clears it)`);
  return `${shellQuote(path)} was not removed completely: ${parts.join("; ")}`;
}

/** Removes a temporary tree the runtime made (doctor's); what had to be left is said, not thrown. */
export function removeTemporaryTree(path: string): void {
  try {
    removeOwnedTree(path);
  } catch (error) {
    if (!(error instanceof UnfinishedRemoval)) throw error;
    diagnose(`left part of the temporary directory behind: ${error.message}`);
  }
}
