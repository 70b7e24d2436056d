/** create is idempotent, refuses a different re-create, and resolves concurrent creates to one workspace. */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { readdirSync, statSync } from "node:fs";
import { create, createInput, ok, op } from "../support/operation.ts";
import { ownedEntries, records } from "../support/store.ts";
import type { Lab } from "../../kit/scratch.ts";
import { repoLab, branches, worktrees } from "../support/git.ts";

let t: Lab;
let repo: string;
beforeEach(() => ({ t, repo } = repoLab()));
afterEach(() => t.cleanup());

const branchInput = (id = "w1") => createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main", worktreeSlug: "topic" });

test("a second create with the same input answers the same bytes without touching the disk", async () => {
  const first = await create(t.options, branchInput());
  expect(first.code).toBe(0);
  const root = first.json.placement.cwd;
  const before = { entries: readdirSync(root).sort(), mtime: statSync(root).mtimeMs, ino: statSync(root).ino, updated: records(t.home)[0]!.updatedAt };
  const second = await create(t.options, branchInput());
  expect(second.code).toBe(0);
  expect(second.stdout).toBe(first.stdout);
  expect({ entries: readdirSync(root).sort(), mtime: statSync(root).mtimeMs, ino: statSync(root).ino, updated: records(t.home)[0]!.updatedAt }).toEqual(before);
  expect(worktrees(repo)).toHaveLength(2);
});

test("a re-create of a paused workspace answers its paused state", async () => {
  ok(await create(t.options, branchInput()));
  ok(await op("pause", "w1", { options: t.options }));
  const again = ok(await create(t.options, branchInput()));
  expect(again.state.lifecycle).toBe("paused");
});

test("a re-create with a materially different input fails naming the difference and changes nothing", async () => {
  const first = ok(await create(t.options, branchInput()));
  const other = createInput("w1", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "other", baseRef: "main", worktreeSlug: "topic" });
  const result = await create(t.options, other);
  expect(result.code).toBe(1);
  expect(result.stdout).toBe("");
  expect(result.stderr).toContain('already exists with a different create input: input.placement.branchName is "other"');
  const mode = await create({ ...t.options, hostDirectory: "clone" }, createInput("w2", { kind: "host-directory", path: repo }));
  expect(mode.code).toBe(0);
  const modeAgain = await create(t.options, createInput("w2", { kind: "host-directory", path: repo }));
  expect(modeAgain.code).toBe(1);
  expect(modeAgain.stderr).toContain("options.hostDirectory");
  expect(ok(await op("inspect", "w1", { options: t.options })).inspection.placement).toEqual(first.placement);
  expect(branches(repo)).toEqual(["feature", "main", "topic"]);
});

test("50 parallel creates of one id: one materialization, 50 identical answers", async () => {
  const results = await Promise.all(Array.from({ length: 50 }, () => create(t.options, branchInput())));
  const failures = results.filter((result) => result.code !== 0);
  expect(failures.map((result) => result.stderr)).toEqual([]);
  const answers = new Set(results.map((result) => result.stdout));
  expect(answers.size).toBe(1);
  expect(worktrees(repo)).toHaveLength(2);
  expect(branches(repo)).toEqual(["feature", "main", "topic"]);
  expect(ownedEntries(t.home)).toHaveLength(1);
  const rows = records(t.home);
  expect(rows.map((row) => [row.status, row.lock])).toEqual([["ready", null]]);
  expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("ready");
});

test("parallel creates of different ids on one repository each get their own worktree", async () => {
  const inputs = Array.from({ length: 8 }, (_, i) => createInput(`w${i}`, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `topic-${i}`, baseRef: "main" }));
  const results = await Promise.all(inputs.map((input) => create(t.options, input)));
  expect(results.filter((result) => result.code !== 0).map((result) => result.stderr)).toEqual([]);
  expect(worktrees(repo)).toHaveLength(9);
  expect(new Set(results.map((result) => result.json.placement.cwd)).size).toBe(8);
});
