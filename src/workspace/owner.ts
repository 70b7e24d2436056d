/** Ownership: every workspace is stamped with the owner of the daemon configuration that made it. */

export const DEFAULT_OWNER = "default";

/** `options.owner`, or "default". */
export function ownerOf(options: Record<string, unknown>): string {
  const owner = options.owner ?? DEFAULT_OWNER;
  if (typeof owner !== "string" || owner === "" || owner.includes("\0")) {
    throw new Error(`options.owner must be a non-empty string without NUL, got ${JSON.stringify(owner)}`);
  }
  return owner;
}

/** Throws the contract's "ownership mismatch" unless `recordedOwner` is `owner`. */
export function assertOwner(workspaceId: string, recordedOwner: string, owner: string): void {
  if (recordedOwner !== owner) {
    throw new Error(
      `ownership mismatch: workspace ${JSON.stringify(workspaceId)} belongs to owner ${JSON.stringify(recordedOwner)}, not ${JSON.stringify(owner)}; nothing was changed`,
    );
  }
}
