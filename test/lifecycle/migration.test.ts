/**
 * An operator upgrading from schema 1 keeps their workspaces. Schema 1 recorded no root
 * identity: such a workspace is used only while its root is reached through no symlink at all
 * (and a worktree's .git and registration point at each other), and its identity is recorded at
 * its first exec or resume.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { lstatSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { directoryOf, mountOf } from "../../src/platform/cgroup.ts";
import { bootId, readProcess } from "../../src/platform/process.ts";
import { envelope } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { create, createInput, ok, op } from "../support/operation.ts";
import { makeRepo } from "../support/git.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { SCHEMA_VERSION } from "../../src/store/db.ts";
import { record, SCHEMA_V1, storePath } from "../support/store.ts";
import { linuxOnly } from "../support/platform.ts";

/** Set where the tests marked with it cannot run: they need Linux (/proc/self/cgroup). */
const PROC = linuxOnly("lifecycle/migration.test.ts, the new execution's cgroup read from /proc", "/proc/self/cgroup");

const V1_COLUMNS = "workspace_id, owner, status, input_json, host_directory, kind, root, details_json, lock_pid, lock_start, lock_boot, lock_op, child_pid, child_start, created_at, updated_at";

let t: Lab;
beforeEach(() => {
  t = lab("phr-migrate-");
});
afterEach(() => t.cleanup());

/** Rewrites the home's store as schema 1 would have written it: the v1 schema text, the same rows. */
function downgradeToV1(): void {
  const path = storePath(t.home);
  const current = new Database(path);
  const rows = current.query(`SELECT ${V1_COLUMNS} FROM workspaces`).all() as Record<string, unknown>[];
  current.close();
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
  const v1 = new Database(path, { create: true, strict: true });
  v1.run(SCHEMA_V1);
  v1.run("INSERT INTO meta (key, value) VALUES ('schema_version', '1')");
  const insert = v1.query(`INSERT INTO workspaces (${V1_COLUMNS}) VALUES (${V1_COLUMNS.split(", ").map((c) => `$${c}`).join(", ")})`);
  for (const row of rows) insert.run(row as Record<string, string | number | null>);
  v1.close();
}

function schemaVersion(): string {
  const db = new Database(storePath(t.home));
  try {
    return (db.query("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string }).value;
  } finally {
    db.close();
  }
}

function identity(path: string): string {
  const stat = lstatSync(path, { bigint: true });
  return `${stat.dev}:${stat.ino}`;
}

async function pwd(workspaceId: string): Promise<ExecResult> {
  const handle = startExec(workspaceId, envelope(["/bin/pwd", "-P"], { options: t.options, env: {} }));
  handle.closeStdin();
  return await handle.done;
}

test("schema 1 workspaces survive the upgrade; identity is recorded at first exec or resume; a root already swapped is refused", async () => {
  const repo = makeRepo(join(t.dir, "repo"));
  const plain = join(t.dir, "plain");
  const swapped = join(t.dir, "swapped");
  mkdirSync(plain);
  mkdirSync(swapped);
  ok(await create(t.options, createInput("adopted", { kind: "host-directory", path: plain })));
  const tree = ok(await create(t.options, createInput("tree", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
  ok(await create(t.options, createInput("swapped", { kind: "host-directory", path: swapped })));
  downgradeToV1();
  // Swapped before the upgrade: there is no recorded identity to compare with.
  renameSync(swapped, `${swapped}.moved`);
  symlinkSync("/etc", swapped);

  const inspections = await Promise.all(["adopted", "tree", "swapped"].map(async (id) => ok(await op("inspect", id, { options: t.options })).inspection));
  expect(schemaVersion()).toBe(String(SCHEMA_VERSION));
  expect(inspections.map((i) => i.status)).toEqual(["ready", "ready", "error"]);
  expect(inspections[2].message).toBe(`workspace "swapped" root ${swapped} was replaced by a symlink (to /etc); it is no longer the directory this workspace was created with`);
  // Looking records nothing.
  expect(["adopted", "tree", "swapped"].map((id) => record(t.home, id)!.confinement)).toEqual([null, null, null]);

  const ran = await pwd("adopted");
  expect(ran.code).toBe(0);
  expect(ran.stdout.toString()).toBe(`${plain}\n`);
  expect(record(t.home, "adopted")!.confinement).toEqual({ root: identity(plain), checkout: null, gitdir: null });

  const refused = await pwd("swapped");
  expect(refused.code).toBe(1);
  expect(refused.events).toEqual([]);
  expect(refused.stderr).toContain("replaced by a symlink");
  expect(record(t.home, "swapped")!.confinement).toBeNull();

  ok(await op("pause", "tree", { options: t.options }));
  ok(await op("resume", "tree", { options: t.options }));
  const root: string = tree.placement.cwd;
  const gitdir = readFileSync(join(root, ".git"), "utf8").trim().replace(/^gitdir: /, "");
  expect(record(t.home, "tree")!.confinement).toEqual({ root: identity(root), checkout: identity(root), gitdir });
});

test.skipIf(PROC)("schema 1 executions survive the upgrade as process-group executions; new ones record their cgroup", async () => {
  const plain = join(t.dir, "plain");
  mkdirSync(plain);
  ok(await create(t.options, createInput("w", { kind: "host-directory", path: plain })));
  downgradeToV1();
  // An execution a schema 1 wrapper started and still runs: its leader by pid and start time.
  const old = Bun.spawn(["sleep", "60"], { detached: true, stdio: ["ignore", "ignore", "ignore"] });
  try {
    const info = readProcess(old.pid)!;
    const v1 = new Database(storePath(t.home));
    v1.query(
      `INSERT INTO executions (workspace_id, exec_id, mode, purpose, argv0, pid, pgid, start_ticks, boot_id, wrapper_pid, wrapper_start_ticks, started_at)
       VALUES ('w', 'old', 'pipes', 'workspace-script', 'sleep', ?1, ?1, ?2, ?3, ?4, ?5, 1)`,
    ).run(old.pid, info.startTicks, bootId(), process.pid, readProcess(process.pid)!.startTicks);
    v1.close();

    const env = envelope(["/bin/cat", "/proc/self/cgroup"], { options: t.options, env: {} });
    const handle = startExec("w", env);
    handle.closeStdin();
    const ran = await handle.done;
    expect(ran.code, ran.stderr).toBe(0);
    expect(schemaVersion()).toBe(String(SCHEMA_VERSION));
    const rows = new Database(storePath(t.home), { readonly: true });
    const cgroups = rows.query("SELECT exec_id AS id, cgroup FROM executions ORDER BY started_at").all() as { id: string; cgroup: string | null }[];
    rows.close();
    expect(cgroups[0]).toEqual({ id: "old", cgroup: null });
    const cgroupRoot = t.options.cgroupRoot as string | undefined;
    if (cgroupRoot) {
      expect(cgroups[1]!.cgroup!.startsWith(`${cgroupRoot}/paseo-`)).toBe(true);
      const line = ran.stdout.toString().split("\n").find((entry) => entry.startsWith("0::"))!;
      expect(directoryOf(mountOf(cgroupRoot)!, line.slice(3))).toBe(cgroups[1]!.cgroup);
    }

    // pause still ends the schema 1 execution, by its process group (its leader proves it).
    ok(await op("pause", "w", { options: { ...t.options, stopTimeoutMs: 2000 } }));
    await old.exited;
    expect(old.signalCode).toBe("SIGTERM");
  } finally {
    if (old.exitCode === null && old.signalCode === null) old.kill("SIGKILL");
  }
});
