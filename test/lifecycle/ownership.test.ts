/** Ownership: every workspace is stamped with options.owner; another owner can do nothing with it. */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { create, createInput, ok, op } from "../support/operation.ts";
import { record } from "../support/store.ts";
import type { Lab } from "../../kit/scratch.ts";
import { repoLab, worktrees } from "../support/git.ts";

let t: Lab;
let repo: string;
beforeEach(() => ({ t, repo } = repoLab()));
afterEach(() => t.cleanup());

const input = () => createInput("w1", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" });

test('a workspace is stamped with options.owner, "default" when absent', async () => {
  ok(await create(t.options, input()));
  expect(record(t.home, "w1")?.owner).toBe("default");
  ok(await create({ ...t.options, owner: "alice" }, createInput("w2", { kind: "host-directory", path: repo })));
  expect(record(t.home, "w2")?.owner).toBe("alice");
});

test("every operation under another owner fails with ownership mismatch and changes nothing", async () => {
  const alice = { ...t.options, owner: "alice" };
  const bob = { ...t.options, owner: "bob" };
  const created = ok(await create(alice, input()));
  const root: string = created.placement.cwd;
  const files = readdirSync(root).sort();
  const before = record(t.home, "w1");

  const attempts = [
    await op("create", "w1", { input: input(), options: bob }),
    await op("inspect", "w1", { options: bob }),
    await op("pause", "w1", { options: bob }),
    await op("resume", "w1", { options: bob }),
    await op("destroy", "w1", { options: bob }),
    await op("reconcile", null, { options: bob, workspaceIds: ["w1"] }),
    await op("inspect", "w1", { options: { stateDirectory: t.home } }),
  ];
  for (const result of attempts) {
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("ownership mismatch");
    expect(result.stderr).toContain('"w1"');
  }
  expect(record(t.home, "w1")).toEqual(before);
  expect(readdirSync(root).sort()).toEqual(files);
  expect(worktrees(repo)).toEqual([repo, root]);
  expect(ok(await op("inspect", "w1", { options: alice })).inspection.status).toBe("ready");
});

test("the owner can pause, resume and destroy its own workspace", async () => {
  const alice = { ...t.options, owner: "alice" };
  ok(await create(alice, input()));
  ok(await op("pause", "w1", { options: alice }));
  ok(await op("resume", "w1", { options: alice }));
  ok(await op("destroy", "w1", { options: alice }));
  expect(record(t.home, "w1")).toBeNull();
});

test("a malformed owner is refused before anything happens", async () => {
  for (const owner of ["", 12, "a\u0000b"]) {
    const result = await op("create", "w1", { input: input(), options: { ...t.options, owner } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("options.owner must be a non-empty string");
  }
  expect(worktrees(repo)).toEqual([repo]);
});
