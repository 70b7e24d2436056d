/** pause, resume, destroy: idempotent; they stop live executions; destroy removes exactly what the workspace owns. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readProcess } from "../../src/platform/process.ts";
import { executionOf } from "../support/records.ts";
import { insertExecution, liveExecutionRows, ownedEntries, records, withStore } from "../support/store.ts";
import { request, runBinary } from "../../kit/binary.ts";
import { tempDir, type Lab } from "../../kit/scratch.ts";
import { create, createInput, ok, op } from "../support/operation.ts";
import { repoLab, branches, git, makeRemote, worktrees } from "../support/git.ts";

let t: Lab;
let repo: string;
const spawned: Bun.Subprocess[] = [];
beforeEach(() => ({ t, repo } = repoLab()));
afterEach(() => {
  for (const proc of spawned.splice(0)) if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  t.cleanup();
});

const branchInput = (id = "w1", branchName = "topic") => createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName, baseRef: "main" });

/**
 * A live workload recorded as an execution of the workspace, the way exec records one: its
 * own session and group, identity from /proc. The test process plays the (live) wrapper.
 */
async function liveExecution(workspaceId: string, execId: string, argv = ["sleep", "1000"]): Promise<Bun.Subprocess> {
  const proc = Bun.spawn(argv, { detached: true, stdio: ["ignore", "ignore", "ignore"] });
  spawned.push(proc);
  // The start time is fixed at fork and survives exec, so it can be read at once.
  const record = executionOf(workspaceId, execId, proc.pid, { argv0: argv[0]! });
  await Bun.sleep(50); // let a shell install its trap before anyone signals it
  withStore(t.home, (db) => insertExecution(db, record));
  return proc;
}

describe("pause", () => {
  test("pause preserves files, is idempotent, and a fresh process resumes", async () => {
    const created = ok(await create(t.options, branchInput()));
    const root: string = created.placement.cwd;
    writeFileSync(join(root, "work-in-progress.txt"), "unsaved\n");
    expect(await op("pause", "w1", { options: t.options })).toMatchObject({ code: 0, stdout: '{"type":"ok","protocolVersion":1}\n' });
    expect(await op("pause", "w1", { options: t.options })).toMatchObject({ code: 0, stdout: '{"type":"ok","protocolVersion":1}\n' });
    const inspected = ok(await op("inspect", "w1", { options: t.options }));
    expect(inspected.inspection.status).toBe("paused");
    expect(inspected.inspection.state.lifecycle).toBe("paused");
    expect(readFileSync(join(root, "work-in-progress.txt"), "utf8")).toBe("unsaved\n");

    const resumed = await op("resume", "w1", { options: t.options });
    expect(resumed.code).toBe(0);
    expect(resumed.json).toEqual(created);
    expect((await op("resume", "w1", { options: t.options })).stdout).toBe(resumed.stdout);
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("ready");
    expect(readFileSync(join(root, "work-in-progress.txt"), "utf8")).toBe("unsaved\n");
  });

  test("pause stops every live execution (SIGTERM first) and returns only when they are gone", async () => {
    ok(await create(t.options, branchInput()));
    const a = await liveExecution("w1", "exec-a");
    const b = await liveExecution("w1", "exec-b");
    ok(await op("pause", "w1", { options: t.options }));
    expect(readProcess(a.pid) === null || readProcess(a.pid)!.state === "Z").toBe(true);
    await Promise.all([a.exited, b.exited]);
    expect([a.signalCode, b.signalCode]).toEqual(["SIGTERM", "SIGTERM"]);
    expect(liveExecutionRows(t.home, "w1")).toEqual([]);
  });

  test("a workload ignoring SIGTERM is SIGKILLed after options.stopTimeoutMs", async () => {
    ok(await create(t.options, branchInput()));
    const stubborn = await liveExecution("w1", "exec-stubborn", ["/bin/sh", "-c", "trap '' TERM; sleep 1000 & wait"]);
    const started = performance.now();
    ok(await op("pause", "w1", { options: { ...t.options, stopTimeoutMs: 400 } }));
    const elapsed = performance.now() - started;
    await stubborn.exited;
    expect(stubborn.signalCode).toBe("SIGKILL");
    expect(elapsed).toBeGreaterThanOrEqual(400);
  });

  test("pause and resume of a missing workspace fail; destroy of one answers ok", async () => {
    for (const name of ["pause", "resume"] as const) {
      const result = await op(name, "nope", { options: t.options });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain('workspace "nope" does not exist');
    }
    expect(ok(await op("destroy", "nope", { options: t.options }))).toEqual({ type: "ok", protocolVersion: 1 });
    expect(ok(await op("inspect", "nope", { options: t.options }))).toEqual({ type: "inspection", protocolVersion: 1, inspection: { status: "missing" } });
  });

  test("an invalid stopTimeoutMs is refused before anything is stopped", async () => {
    ok(await create(t.options, branchInput()));
    const result = await op("pause", "w1", { options: { ...t.options, stopTimeoutMs: -1 } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("options.stopTimeoutMs");
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("ready");
  });
});

describe("inspect and resume when the root is gone", () => {
  test("inspect reports error after the root is deleted behind our back; resume re-adds a worktree", async () => {
    const created = ok(await create(t.options, branchInput()));
    const root: string = created.placement.cwd;
    git(root, "commit", "-q", "--allow-empty", "-m", "work on topic");
    const head = git(root, "rev-parse", "HEAD");
    rmSync(root, { recursive: true, force: true });
    const inspected = ok(await op("inspect", "w1", { options: t.options }));
    expect(inspected.inspection.status).toBe("error");
    expect(inspected.inspection.message).toContain(`workspace "w1" root ${root} no longer exists`);

    ok(await op("pause", "w1", { options: t.options }));
    const resumed = ok(await op("resume", "w1", { options: t.options }));
    expect(resumed).toEqual(created);
    expect(git(root, "rev-parse", "HEAD")).toBe(head);
    expect(readFileSync(join(root, "README.md"), "utf8")).toBe("hello\n");
    expect(worktrees(repo)).toEqual([repo, root]);
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("ready");
  });

  test("a vanished clone cannot be resumed; inspect keeps saying error; destroy still cleans up", async () => {
    const url = makeRemote(repo, join(t.dir, "remote.git"));
    const created = ok(await create(t.options, createInput("w1", { kind: "git", url, revision: "" })));
    rmSync(created.placement.cwd, { recursive: true, force: true });
    const resumed = await op("resume", "w1", { options: t.options });
    expect(resumed.code).toBe(1);
    expect(resumed.stderr).toContain('cannot resume workspace "w1"');
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("error");
    ok(await op("destroy", "w1", { options: t.options }));
    expect(ownedEntries(t.home)).toEqual([]);
    expect(records(t.home)).toEqual([]);
  });

  test("a root replaced by a file is an error, not a workspace", async () => {
    const plain = join(t.dir, "plain");
    mkdirSync(plain);
    ok(await create(t.options, createInput("w1", { kind: "host-directory", path: plain })));
    rmSync(plain, { recursive: true });
    writeFileSync(plain, "not a directory");
    const inspected = ok(await op("inspect", "w1", { options: t.options }));
    expect(inspected.inspection).toEqual({ status: "error", message: `workspace "w1" root ${plain} is not a directory` });
  });
});

describe("destroy", () => {
  test("destroy SIGKILLs live executions, removes the worktree and its storage, keeps the branch and the repository", async () => {
    const created = ok(await create(t.options, branchInput()));
    const root: string = created.placement.cwd;
    const workload = await liveExecution("w1", "exec-1");
    const keep = ok(await create(t.options, branchInput("w2", "other")));
    expect(await op("destroy", "w1", { options: t.options })).toMatchObject({ code: 0, stdout: '{"type":"ok","protocolVersion":1}\n' });
    await workload.exited;
    expect(workload.signalCode).toBe("SIGKILL");
    expect(existsSync(root)).toBe(false);
    expect(worktrees(repo)).toEqual([repo, keep.placement.cwd]);
    expect(branches(repo)).toEqual(["feature", "main", "other", "topic"]);
    expect(readFileSync(join(repo, "README.md"), "utf8")).toBe("hello\n");
    expect(records(t.home).map((row) => row.workspaceId)).toEqual(["w2"]);
    expect(withStore(t.home, (db) => db.query("SELECT count(*) AS n FROM executions WHERE workspace_id = 'w1'").get())).toEqual({ n: 0 });
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection).toEqual({ status: "missing" });
    expect(ok(await op("inspect", "w2", { options: t.options })).inspection.status).toBe("ready");
    expect(ok(await op("destroy", "w1", { options: t.options }))).toEqual({ type: "ok", protocolVersion: 1 });
    ok(await op("destroy", "w2", { options: t.options }));
    expect(ownedEntries(t.home)).toEqual([]);
    // What stays: the store, the runtime log, the input-digest key, and the (empty) workspaces directory.
    expect(readdirSync(t.home).filter((name) => !name.startsWith("state.sqlite")).sort()).toEqual(["input.key", "log", "workspaces"]);
  });

  test("destroy never deletes an adopted directory", async () => {
    const before = readdirSync(repo).sort();
    ok(await create(t.options, createInput("w1", { kind: "host-directory", path: repo }, { kind: "existing", relativeCwd: "app" })));
    ok(await op("pause", "w1", { options: t.options }));
    ok(await op("destroy", "w1", { options: t.options }));
    expect(readdirSync(repo).sort()).toEqual(before);
    expect(readFileSync(join(repo, "app", "index.txt"), "utf8")).toBe("app\n");
    expect(records(t.home)).toEqual([]);
  });

  test("destroy removes a copy even when a workload made parts of it read-only", async () => {
    const plain = join(t.dir, "plain");
    mkdirSync(plain);
    const created = ok(await create({ ...t.options, hostDirectory: "clone" }, createInput("w1", { kind: "host-directory", path: plain })));
    mkdirSync(join(created.placement.cwd, "locked"));
    writeFileSync(join(created.placement.cwd, "locked", "f"), "x");
    Bun.spawnSync(["chmod", "0500", join(created.placement.cwd, "locked")]);
    ok(await op("destroy", "w1", { options: t.options }));
    expect(ownedEntries(t.home)).toEqual([]);
    expect(existsSync(plain)).toBe(true);
  });
});

test("inspect and signal in a home that does not exist yet create nothing", async () => {
  const dir = tempDir("phr-nohome-");
  try {
    const home = join(dir.path, "never-created");
    const inspected = await runBinary(["inspect", "--workspace-id", "w"], { stdin: request({ stateDirectory: home }) });
    expect(inspected.stdout).toBe('{"type":"inspection","protocolVersion":1,"inspection":{"status":"missing"}}\n');
    expect(inspected.code).toBe(0);
    const signalled = await runBinary(["signal", "--workspace-id", "w", "--exec-id", "e", "--signal", "SIGKILL"], { stdin: request({ stateDirectory: home }) });
    expect(signalled.code).toBe(1);
    expect(signalled.stderr).toContain("not ready");
    expect(existsSync(home)).toBe(false);
  } finally {
    dir.cleanup();
  }
});
