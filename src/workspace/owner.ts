/** Ownership: every workspace is stamped with the owner of the daemon configuration that made it. */

/** Throws the contract's "ownership mismatch" unless `recordedOwner` is `owner`. */
export function assertOwner(workspaceId: string, recordedOwner: string, owner: string): void {
  if (recordedOwner !== owner) {
    throw new Error(
      `ownership mismatch: workspace ${JSON.stringify(workspaceId)} belongs to owner ${JSON.stringify(recordedOwner)}, not ${JSON.stringify(owner)}; nothing was changed`,
    );
  }
}
