/** reconcile removes only this owner's unlisted workspaces, refuses a foreign listed id, and reaps abandoned executions. */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { bootId, readProcess } from "../../src/platform/process.ts";
import { executionOf } from "../support/records.ts";
import { insertExecution, liveExecutionRows, ownedEntries, records, withStore } from "../support/store.ts";
import { insertCreating } from "../../src/store/workspaces.ts";
import { storageDir } from "../../src/workspace/paths.ts";
import { runBinary } from "../../kit/binary.ts";
import { create, createInput, ok, op } from "../support/operation.ts";
import type { Lab } from "../../kit/scratch.ts";
import { repoLab, branches, worktrees } from "../support/git.ts";

let t: Lab;
let repo: string;
const alice = () => ({ ...t.options, owner: "alice" });
const bob = () => ({ ...t.options, owner: "bob" });
beforeEach(() => ({ t, repo } = repoLab()));
afterEach(() => t.cleanup());

const worktreeInput = (id: string) => createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `b-${id}`, baseRef: "main" });

async function fixture() {
  const a1 = ok(await create(alice(), worktreeInput("a1")));
  ok(await create(alice(), worktreeInput("a2")));
  ok(await create(alice(), createInput("a3", { kind: "host-directory", path: repo })));
  const b1 = ok(await create(bob(), worktreeInput("b1")));
  return { a1: a1.placement.cwd as string, b1: b1.placement.cwd as string };
}

const ids = () => records(t.home).map((row) => `${row.owner}:${row.workspaceId}`).sort();

test("describe advertises reconcile", async () => {
  const result = await runBinary(["describe"]);
  expect(JSON.parse(result.stdout).reconcile).toBe(true);
});

test("reconcile destroys this owner's unlisted workspaces and nothing of another owner", async () => {
  const { a1, b1 } = await fixture();
  const result = await op("reconcile", null, { options: alice(), workspaceIds: ["a1", "unknown-id"] });
  expect(result.code).toBe(0);
  expect(result.stdout).toBe('{"type":"ok","protocolVersion":1}\n');
  expect(ids()).toEqual(["alice:a1", "bob:b1"]);
  expect(worktrees(repo).sort()).toEqual([repo, a1, b1].sort());
  expect(readdirSync(repo)).toContain("README.md");
  expect(ok(await op("inspect", "b1", { options: bob() })).inspection.status).toBe("ready");

  ok(await op("reconcile", null, { options: alice(), workspaceIds: [] }));
  expect(ids()).toEqual(["bob:b1"]);
  expect(ownedEntries(t.home)).toHaveLength(1);
  expect(branches(repo)).toContain("b-a1");
});

test("a listed id of another owner fails naming it, and nothing changes", async () => {
  await fixture();
  const before = ids();
  const result = await op("reconcile", null, { options: alice(), workspaceIds: ["a1", "b1"] });
  expect(result.code).toBe(1);
  expect(result.stdout).toBe("");
  expect(result.stderr).toContain("ownership mismatch");
  expect(result.stderr).toContain('"b1"');
  expect(ids()).toEqual(before);
  expect(worktrees(repo)).toHaveLength(4);
});

test("workspaceIds is required", async () => {
  const result = await op("reconcile", null, { options: alice() });
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("reconcile needs `workspaceIds`");
});

test("leftovers of a create whose process died are cleaned up even when listed", async () => {
  ok(await create(alice(), worktreeInput("a1")));
  // What a create killed right after recording its intent leaves: a creating row held by a dead pid.
  const dead = Bun.spawnSync(["true"]).pid;
  const leftover = storageDir(t.home, "ghost");
  mkdirSync(join(leftover, "half-made"), { recursive: true });
  withStore(t.home, (db) =>
    insertCreating(db, { workspaceId: "ghost", owner: "alice", input: worktreeInput("ghost"), inputDigest: "", hostDirectory: "adopt", holder: { pid: dead, startTicks: 1, bootId: bootId() }, op: "create" }),
  );
  expect(ok(await op("inspect", "ghost", { options: alice() })).inspection).toEqual({ status: "missing" });
  ok(await op("reconcile", null, { options: alice(), workspaceIds: ["a1", "ghost"] }));
  expect(ids()).toEqual(["alice:a1"]);
  expect(ownedEntries(t.home)).toHaveLength(1);
});

test("reconcile marks dead executions finished and kills a live workload whose wrapper is gone", async () => {
  ok(await create(alice(), worktreeInput("a1")));
  const workload = Bun.spawn(["sleep", "1000"], { detached: true, stdio: ["ignore", "ignore", "ignore"] });
  const finished = Bun.spawn(["true"]);
  await finished.exited;
  const deadWrapper = Bun.spawnSync(["true"]).pid;
  try {
    withStore(t.home, (db) => {
      const deadWrapperOf = { wrapperPid: deadWrapper, wrapperStartTicks: 1 };
      insertExecution(db, executionOf("a1", "orphaned", workload.pid, deadWrapperOf));
      insertExecution(db, executionOf("a1", "dead", finished.pid, { ...deadWrapperOf, argv0: "true", pgid: finished.pid, startTicks: 1 }));
    });
    expect(liveExecutionRows(t.home, "a1")).toHaveLength(2);
    ok(await op("reconcile", null, { options: alice(), workspaceIds: ["a1"] }));
    await workload.exited;
    expect(workload.signalCode).toBe("SIGKILL");
    expect(liveExecutionRows(t.home, "a1")).toEqual([]);
    expect(ok(await op("inspect", "a1", { options: alice() })).inspection.status).toBe("ready");
  } finally {
    if (workload.exitCode === null && workload.signalCode === null) workload.kill("SIGKILL");
  }
});

test("reconcile never touches another owner's executions, even abandoned ones", async () => {
  ok(await create(bob(), worktreeInput("b1")));
  const workload = Bun.spawn(["sleep", "1000"], { detached: true, stdio: ["ignore", "ignore", "ignore"] });
  const deadWrapper = Bun.spawnSync(["true"]).pid;
  try {
    withStore(t.home, (db) =>
      insertExecution(db, executionOf("b1", "bobs", workload.pid, { wrapperPid: deadWrapper, wrapperStartTicks: 1 })),
    );
    ok(await op("reconcile", null, { options: alice(), workspaceIds: [] }));
    await Bun.sleep(50);
    expect(readProcess(workload.pid)?.state).not.toBe("Z");
    expect(liveExecutionRows(t.home, "b1")).toHaveLength(1);
  } finally {
    workload.kill("SIGKILL");
  }
});
