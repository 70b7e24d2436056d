/** The store refuses what it does not understand, and never rewrites it. */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { chmodSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { create, createInput, lab, ok, op, type Lab } from "./support.ts";

let t: Lab;
beforeEach(() => {
  t = lab("phr-store-");
});
afterEach(() => t.cleanup());

function rawQuery<T>(sql: string): T {
  const db = new Database(join(t.home, "state.sqlite"));
  try {
    return db.query(sql).get() as T;
  } finally {
    db.close();
  }
}

test("a database from an unknown schema version is refused with a clear error and left untouched", async () => {
  mkdirSync(join(t.dir, "project"));
  ok(await create(t.options, createInput("w1", { kind: "host-directory", path: join(t.dir, "project") })));
  const db = new Database(join(t.home, "state.sqlite"));
  db.run("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  db.close();
  for (const name of ["inspect", "pause", "destroy"] as const) {
    const result = await op(name, "w1", { options: t.options });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("has schema version 99");
    expect(result.stderr).toContain("refusing to change it");
  }
  expect(rawQuery<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'").value).toBe("99");
  expect(rawQuery<{ n: number }>("SELECT count(*) AS n FROM workspaces").n).toBe(1);
});

test("a foreign SQLite file in the home is refused, never migrated", async () => {
  mkdirSync(t.home, { mode: 0o700 });
  const db = new Database(join(t.home, "state.sqlite"));
  db.run("CREATE TABLE notes (text TEXT)");
  db.close();
  const result = await op("inspect", "w1", { options: t.options });
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("is not a paseo-host-runtime database");
  expect(rawQuery<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").n).toBe(1);
});

test("a group- or world-writable home is refused before anything is read", async () => {
  mkdirSync(t.home, { mode: 0o700 });
  chmodSync(t.home, 0o777);
  mkdirSync(join(t.dir, "project"));
  const result = await create(t.options, createInput("w1", { kind: "host-directory", path: join(t.dir, "project") }));
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("group- or world-writable");
  expect(result.stderr).toContain("chmod 700");
});
