/**
 * Where each workspace of a `--remote` runtime lives: one row per (owner, workspace id), written
 * before the remote create runs, so every later operation (and a cleanup after a crash) goes
 * to the same host. Hosts are named by their `user@host:port` key, never with credentials. A row
 * goes only once its host says the workspace is gone (remote/dispatch.ts), never because a
 * reconcile did not list it: a workspace without its row is routed by hash, maybe elsewhere.
 * Each row names the configuration (callerConfiguration) that made or last listed it: runtimes
 * sharing a local home and an owner each forget only their own rows at reconcile.
 */
import type { Database } from "bun:sqlite";
import { now, writeTransaction } from "./db.ts";

/** The host recorded for a workspace, or null. */
export function placedHost(db: Database, owner: string, workspaceId: string): string | null {
  const row = db.query("SELECT host FROM remote_placements WHERE owner = ? AND workspace_id = ?").get(owner, workspaceId) as { host: string } | null;
  return row?.host ?? null;
}

/**
 * Records `host` for a workspace unless one is recorded already, in one transaction, and
 * returns the host that is recorded now: of two concurrent creates, both get the first choice.
 */
export function placeOnce(db: Database, owner: string, workspaceId: string, host: string, configuration: string): string {
  return writeTransaction(db, () => {
    db.run("INSERT OR IGNORE INTO remote_placements (owner, workspace_id, host, placed_at, configuration) VALUES (?, ?, ?, ?, ?)", [owner, workspaceId, host, now(), configuration]);
    return placedHost(db, owner, workspaceId)!;
  });
}

/** Every placement of `owner`: workspace id → host key. */
export function placementsOf(db: Database, owner: string): Map<string, string> {
  return new Map([...placementRecordsOf(db, owner)].map(([id, placed]) => [id, placed.host]));
}

/** A placement as reconcile reads it: the host, and the configuration it belongs to (null: recorded before schema 5). */
export interface Placement {
  host: string;
  configuration: string | null;
}

/** Every placement of `owner` with its configuration: workspace id → placement. */
export function placementRecordsOf(db: Database, owner: string): Map<string, Placement> {
  const rows = db.query("SELECT workspace_id, host, configuration FROM remote_placements WHERE owner = ? ORDER BY workspace_id").all(owner) as { workspace_id: string; host: string; configuration: string | null }[];
  return new Map(rows.map((row) => [row.workspace_id, { host: row.host, configuration: row.configuration }]));
}

/** The listed workspaces' rows now belong to `configuration`: the daemon that lists them knows them (as the host stamps them). */
export function claimPlacements(db: Database, owner: string, workspaceIds: readonly string[], configuration: string): void {
  writeTransaction(db, () => {
    for (const id of workspaceIds) db.run("UPDATE remote_placements SET configuration = ? WHERE owner = ? AND workspace_id = ?", [configuration, owner, id]);
  });
}

/** Forgets a workspace's placement (its host said it is gone: its destroy ok, or `missing` on inspect). */
export function forgetPlacement(db: Database, owner: string, workspaceId: string): void {
  writeTransaction(db, () => db.run("DELETE FROM remote_placements WHERE owner = ? AND workspace_id = ?", [owner, workspaceId]));
}
