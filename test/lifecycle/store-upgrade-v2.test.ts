/**
 * The store's step from version 2 (issue 23 adds destroy_problem, listed_at, orphaned_at and the
 * made_branches table): a version 2 database is migrated in place, its workspaces keep working,
 * each counts as listed by its configuration since its create, and none is an orphan.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { SCHEMA_VERSION } from "../../src/store/db.ts";
import { record, SCHEMA_V2, storePath } from "../support/store.ts";
import { createInput, ok, op } from "../support/operation.ts";
import { lab, type Lab } from "../../kit/scratch.ts";

let t: Lab;
beforeEach(() => {
  t = lab("phr-store-v2-");
});
afterEach(() => t.cleanup());

test("a version 2 database is migrated in place: its workspaces keep working, listed since their create, nobody's orphans", async () => {
  const project = join(t.dir, "project");
  mkdirSync(project);
  mkdirSync(t.home, { mode: 0o700 });
  const db = new Database(storePath(t.home));
  db.run(SCHEMA_V2);
  db.run("INSERT INTO meta (key, value) VALUES ('schema_version', '2')");
  const input = JSON.stringify(createInput("w1", { kind: "host-directory", path: project }));
  db.run(
    `INSERT INTO workspaces (workspace_id, owner, status, input_json, host_directory, kind, root, details_json, created_at, updated_at, dialect, configuration)
     VALUES ('w1', 'default', 'ready', ?1, 'adopt', 'adopted', ?2, '{"branch":""}', 1000, 2000, 'seed', ?3)`,
    [input, project, "f".repeat(64)],
  );
  db.close();

  expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("ready");
  const raw = new Database(storePath(t.home), { readonly: true });
  try {
    expect(raw.query("SELECT value FROM meta WHERE key = 'schema_version'").get()).toEqual({ value: String(SCHEMA_VERSION) });
    expect(raw.query("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'made_branches'").get()).toEqual({ n: 1 });
  } finally {
    raw.close();
  }
  expect(record(t.home, "w1")).toMatchObject({ status: "ready", listedAt: 1000, orphanedAt: null, destroyProblem: null });
  ok(await op("destroy", "w1", { options: t.options }));
  expect(record(t.home, "w1")).toBeNull();
});
