/** The store refuses what it does not understand, and never rewrites it. */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { chmodSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { create, createInput, ok, op } from "../support/operation.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { SCHEMA_VERSION } from "../../src/store/db.ts";
import { record, SCHEMA_V1, storePath } from "../support/store.ts";

/** The schema 1 text, as the last schema 1 release shipped it. */

let t: Lab;
beforeEach(() => {
  t = lab("phr-store-");
});
afterEach(() => t.cleanup());

function rawQuery<T>(sql: string): T {
  const db = new Database(storePath(t.home));
  try {
    return db.query(sql).get() as T;
  } finally {
    db.close();
  }
}

test("a database from an unknown schema version is refused with a clear error and left untouched", async () => {
  mkdirSync(join(t.dir, "project"));
  ok(await create(t.options, createInput("w1", { kind: "host-directory", path: join(t.dir, "project") })));
  const db = new Database(storePath(t.home));
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

test("a version 1 database is migrated to the current version in place: its workspaces keep working, reconcile adopts what it lists", async () => {
  const project = join(t.dir, "project");
  mkdirSync(project);
  mkdirSync(t.home, { mode: 0o700 });
  // Exactly what a version 1 binary left behind: its schema text, its rows.
  const db = new Database(storePath(t.home));
  db.run(SCHEMA_V1);
  db.run("INSERT INTO meta (key, value) VALUES ('schema_version', '1')");
  const input = JSON.stringify(createInput("old", { kind: "host-directory", path: project }));
  for (const id of ["old", "listed"]) {
    db.run(
      `INSERT INTO workspaces (workspace_id, owner, status, input_json, host_directory, kind, root, details_json, created_at, updated_at)
       VALUES (?1, 'default', 'ready', ?2, 'adopt', 'adopted', ?3, '{"branch":""}', 1, 1)`,
      [id, input.replace('"old"', JSON.stringify(id)), project],
    );
  }
  db.close();

  expect(ok(await op("inspect", "old", { options: t.options })).inspection.status).toBe("ready");
  expect(rawQuery<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'").value).toBe(String(SCHEMA_VERSION));
  expect(record(t.home, "old")).toMatchObject({ owner: "default", dialect: "seed", instanceId: null, configuration: null });
  // Of unknown configuration, a v1 workspace is nobody's orphan until a reconcile lists it.
  ok(await op("reconcile", null, { options: t.options, workspaceIds: ["listed"] }));
  expect(record(t.home, "old")?.configuration).toBeNull();
  expect(record(t.home, "listed")?.configuration).toMatch(/^[0-9a-f]{64}$/);
  ok(await op("reconcile", null, { options: t.options, workspaceIds: [] }));
  expect(record(t.home, "listed")).toBeNull();
  expect(record(t.home, "old")?.status).toBe("ready");
  ok(await op("destroy", "old", { options: t.options }));
  expect(record(t.home, "old")).toBeNull();
});

test("a foreign SQLite file in the home is refused, never migrated", async () => {
  mkdirSync(t.home, { mode: 0o700 });
  const db = new Database(storePath(t.home));
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

test("the runtime home: options.stateDirectory, then PASEO_HOST_RUNTIME_HOME, then XDG_STATE_HOME, then ~/.local/state; created 0700", async () => {
  const project = join(t.dir, "project");
  mkdirSync(project);
  const input = createInput("w1", { kind: "host-directory", path: project });
  const env = (vars: Record<string, string>) => ({ HOME: join(t.dir, "user"), XDG_STATE_HOME: "", PASEO_HOST_RUNTIME_HOME: "", ...vars });
  const cases: [Record<string, unknown>, Record<string, string>, string][] = [
    [{ stateDirectory: join(t.dir, "from-options") }, env({ PASEO_HOST_RUNTIME_HOME: join(t.dir, "from-env") }), join(t.dir, "from-options")],
    [{}, env({ PASEO_HOST_RUNTIME_HOME: join(t.dir, "from-env"), XDG_STATE_HOME: join(t.dir, "xdg") }), join(t.dir, "from-env")],
    [{}, env({ XDG_STATE_HOME: join(t.dir, "xdg") }), join(t.dir, "xdg", "paseo-host-runtime")],
    [{}, env({}), join(t.dir, "user", ".local", "state", "paseo-host-runtime")],
  ];
  for (const [options, vars, expected] of cases) {
    const result = await op("create", "w1", { input, options }, vars);
    expect(result.code, result.stderr).toBe(0);
    const stat = Bun.file(storePath(expected));
    expect(await stat.exists()).toBe(true);
    expect(statSync(expected).mode & 0o777).toBe(0o700);
  }
});

test("a relative stateDirectory is refused", async () => {
  const result = await op("inspect", "w1", { options: { stateDirectory: "relative/home" } });
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("options.stateDirectory must be an absolute path");
});

test("a version 1 database is migrated to the current version in place: its workspaces stay usable, the new table exists", async () => {
  const project = join(t.dir, "project");
  mkdirSync(project);
  mkdirSync(t.home, { mode: 0o700 });
  const v1 = new Database(storePath(t.home));
  v1.run(SCHEMA_V1);
  v1.run("INSERT INTO meta (key, value) VALUES ('schema_version', '1')");
  const input = createInput("w1", { kind: "host-directory", path: project });
  v1.run(
    "INSERT INTO workspaces (workspace_id, owner, status, input_json, host_directory, kind, root, details_json, created_at, updated_at) VALUES ('w1', 'default', 'ready', ?, 'adopt', 'adopted', ?, '{\"branch\":\"\"}', 1, 1)",
    [JSON.stringify(input), project],
  );
  v1.close();
  const inspected = ok(await op("inspect", "w1", { options: t.options }));
  expect(inspected.inspection.status).toBe("ready");
  expect(inspected.inspection.placement.cwd).toBe(project);
  expect(rawQuery<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'").value).toBe(String(SCHEMA_VERSION));
  expect(rawQuery<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'remote_placements'").n).toBe(1);
  // A second open finds the current version and changes nothing.
  expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("ready");
});

test("processes opening a new store at the same moment all get it: none is told the database is locked", async () => {
  // The first open of a new file switches it to WAL, which SQLite does not wait for: it failed at once in a few rounds of 8.
  const rounds = process.env.PASEO_STRESS ? 150 : 20;
  const answers = new Map<string, number>();
  for (let round = 0; round < rounds; round++) {
    const path = join(t.dir, `round-${round}.sqlite`);
    const startAt = String(Date.now() + 300);
    const children = Array.from({ length: 8 }, () => Bun.spawn([process.execPath, join(import.meta.dir, "../support/open-store.ts"), path, startAt], { stdout: "pipe", stderr: "inherit" }));
    for (const child of children) {
      const answer = (await new Response(child.stdout).text()).trim();
      await child.exited;
      answers.set(answer, (answers.get(answer) ?? 0) + 1);
    }
  }
  expect([...answers]).toEqual([["ok", rounds * 8]]);
});
