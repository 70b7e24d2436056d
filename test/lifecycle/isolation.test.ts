/**
 * A workspace keeps its isolation, as it keeps its dialect (issue 22): created with
 * `isolation: "sandbox"` (and its network and paths), every later exec and resume runs with at
 * least that confinement; a request asking for less is refused before anything is launched,
 * naming what was recorded. Operator commands follow the record; `ls` shows it. Before the
 * record, an exec whose options left `isolation` out ran on the host, unconfined.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { runBinary } from "../../kit/binary.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { missingTools } from "../support/tools.ts";
import { create, createInput, ok, op } from "../support/operation.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { record, SCHEMA_V1, storePath } from "../support/store.ts";

const missing = missingTools("isolation.test.ts", ["bwrap"]);
let t: Lab;
let project: string;
beforeEach(() => {
  t = lab("phr-isolation-");
  project = join(t.dir, "project");
  mkdirSync(project);
});
afterEach(() => t.cleanup());

const sandboxed = (extra: Record<string, unknown> = {}) => ({ ...t.options, isolation: "sandbox", ...extra });

async function exec(options: Record<string, unknown>, argv: string[]): Promise<ExecResult> {
  const handle = startExec("w", envelope(argv, { options, env: { PATH } }));
  handle.closeStdin();
  return handle.done;
}

/** An exec that must be refused before launch: no event, exit 1, the marker never written, the reason on stderr. */
async function expectRefused(options: Record<string, unknown>, asked: string): Promise<void> {
  const marker = join(project, `launched-${crypto.randomUUID()}`);
  const result = await exec(options, ["/usr/bin/touch", marker]);
  expect(result.code).toBe(1);
  expect(result.events).toEqual([]);
  expect(result.stderr).toContain('workspace "w" was created with isolation "sandbox"');
  expect(result.stderr).toContain(`this request asks for less (${asked}); nothing was launched`);
  expect(existsSync(marker)).toBe(false);
}

describe.skipIf(missing.length > 0)("a workspace created sandboxed stays sandboxed", () => {
  test('an exec with options that leave isolation out, or say "none", is refused; so is one asking for the network or paths the record does not give', async () => {
    const outside = join(t.dir, "outside");
    mkdirSync(outside);
    ok(await create(sandboxed({ network: "none", sandboxReadOnly: [outside] }), createInput("w", { kind: "host-directory", path: project })));
    await expectRefused(t.options, 'isolation "none"');
    await expectRefused({ ...t.options, isolation: "none" }, 'isolation "none"');
    await expectRefused(sandboxed(), 'network "host"');
    await expectRefused(sandboxed({ network: "none", sandboxReadWrite: [outside] }), `"${outside}" read-write`);
    await expectRefused(sandboxed({ network: "none", sandboxReadOnly: [t.dir] }), `"${t.dir}" read-only`);
    // As much confinement as recorded runs, and so does more (one path fewer).
    const same = await exec(sandboxed({ network: "none", sandboxReadOnly: [outside] }), ["/bin/sh", "-c", `test -d ${outside} && echo shown`]);
    expect(same.stdout.toString()).toBe("shown\n");
    const more = await exec(sandboxed({ network: "none" }), ["/bin/sh", "-c", `test -d ${outside} || echo hidden`]);
    expect(more.stdout.toString()).toBe("hidden\n");
  });

  test("resume asking for less is refused and the workspace stays paused; with the record's isolation it resumes", async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: project })));
    ok(await op("pause", "w", { options: t.options }));
    const refused = await op("resume", "w", { options: t.options });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('was created with isolation "sandbox" (network "host", sandboxReadOnly [], sandboxReadWrite []) and keeps it; this request asks for less (isolation "none"); nothing was changed');
    expect(ok(await op("inspect", "w", { options: t.options })).inspection.status).toBe("paused");
    expect(ok(await op("resume", "w", { options: sandboxed() })).state.lifecycle).toBe("ready");
  });

  test("a workspace created without the sandbox takes sandboxed execs: more confinement is always allowed", async () => {
    ok(await create(t.options, createInput("w", { kind: "host-directory", path: project })));
    const result = await exec(sandboxed(), ["/bin/sh", "-c", "test -e /sys/fs/cgroup && echo host || echo sandboxed"]);
    expect(result.stdout.toString()).toBe("sandboxed\n");
    expect(record(t.home, "w")!.isolation).toEqual({ isolation: "none" });
  });

  test("a workspace recorded before isolation was (schema 2) records what its first exec asks, and keeps it", async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: project })));
    const db = new Database(storePath(t.home));
    db.run("UPDATE workspaces SET isolation = NULL, sandbox_json = NULL");
    db.close();
    expect(record(t.home, "w")!.isolation).toBeNull();
    expect((await exec(sandboxed({ network: "none" }), ["/bin/true"])).code).toBe(0);
    expect(record(t.home, "w")!.isolation).toEqual({ isolation: "sandbox", network: "none", sandboxReadOnly: [], sandboxReadWrite: [] });
    await expectRefused(sandboxed(), 'network "host"');
  });

  test("operator commands follow the record: `run` without the daemon's options runs sandboxed, `workspace resume` resumes; `ls` shows the isolation", async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: project })));
    const ran = await runBinary(["run", "-w", "w", "--home", t.home, "--env", `PATH=${PATH}`, "--", "/bin/sh", "-c", "test -e /sys/fs/cgroup && echo host || echo sandboxed"], { env: { PASEO_HOST_RUNTIME_HOME: t.home } });
    expect(ran.stderr).toBe("");
    expect(ran.stdout).toBe("sandboxed\n");
    ok(await op("pause", "w", { options: t.options }));
    const resumed = await runBinary(["workspace", "resume", "-w", "w", "--home", t.home]);
    expect(resumed.code).toBe(0);
    const listed = await runBinary(["ls", "--home", t.home, "--json"]);
    expect(JSON.parse(listed.stdout).workspaces[0].isolation).toEqual({ isolation: "sandbox", network: "host", sandboxReadOnly: [], sandboxReadWrite: [] });
    const table = await runBinary(["ls", "--home", t.home]);
    expect(table.stdout.split("\n")[1]).toMatch(/ adopted +sandbox +0 /);
    // Nothing runs in a destroy: it needs no isolation of its own.
    expect((await runBinary(["rm", "-w", "w", "--home", t.home])).code).toBe(0);
  });
});

test("a migrated store is exactly a new one: the isolation columns are added, NULL for the rows it had", async () => {
  ok(await create(t.options, createInput("w", { kind: "host-directory", path: project })));
  const columns = (path: string) => {
    const db = new Database(path);
    try {
      return (db.query("SELECT name, type, dflt_value FROM pragma_table_info('workspaces') ORDER BY cid").all() as object[]).map((row) => JSON.stringify(row));
    } finally {
      db.close();
    }
  };
  const old = join(t.dir, "old-home");
  mkdirSync(old, { mode: 0o700 });
  const v1 = new Database(storePath(old));
  v1.run(SCHEMA_V1);
  v1.run("INSERT INTO meta (key, value) VALUES ('schema_version', '1')");
  v1.run("INSERT INTO workspaces (workspace_id, owner, status, input_json, host_directory, kind, root, details_json, created_at, updated_at) VALUES ('v', 'default', 'ready', '{}', 'adopt', 'adopted', ?, '{}', 1, 1)", [project]);
  v1.close();
  ok(await op("inspect", "v", { options: { stateDirectory: old } }));
  expect(columns(storePath(old))).toEqual(columns(storePath(t.home)));
  expect(record(old, "v")!.isolation).toBeNull();
});
