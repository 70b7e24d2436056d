/**
 * An attack on issue 23's "made branches": a create attaches again only to the branch an
 * earlier create of the same workspace id made and its destroy kept. A user who deletes that
 * branch and later makes their own of the same name from an advanced main has a branch that
 * still descends from where ours was made (main's history holds it): it is not ours, and the
 * agent must not be put to work on it.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInput, ok, op } from "../support/operation.ts";
import { git, repoLab, worktrees } from "../support/git.ts";
import type { Lab } from "../../kit/scratch.ts";

let t: Lab;
let repo: string;
beforeEach(() => ({ t, repo } = repoLab("phr-made-branch-")));
afterEach(() => t.cleanup());

const input = () => createInput("w1", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "agent/w1", baseRef: "main" });

function commitIn(dir: string, file: string, message: string): string {
  writeFileSync(join(dir, file), `${message}\n`);
  git(dir, "add", file);
  git(dir, "commit", "-q", "-m", message);
  return git(dir, "rev-parse", "HEAD");
}

test("a branch of the same name the user made anew from main is refused, not taken for ours", async () => {
  const first = ok(await op("create", "w1", { input: input(), options: t.options }));
  commitIn(first.placement.cwd, "agent.txt", "agent work");
  ok(await op("destroy", "w1", { options: t.options }));
  // The user throws the agent's branch away, moves main on, and makes their own agent/w1 there.
  git(repo, "branch", "-q", "-D", "agent/w1");
  commitIn(repo, "main.txt", "main moves on");
  git(repo, "checkout", "-q", "-b", "agent/w1");
  const theirs = commitIn(repo, "mine.txt", "the user's own work");
  git(repo, "checkout", "-q", "main");

  const again = await op("create", "w1", { input: input(), options: t.options });
  expect(again.code).toBe(1);
  expect(again.stderr).toContain(`branch "agent/w1" already exists in ${repo}`);
  expect(git(repo, "rev-parse", "agent/w1")).toBe(theirs);
  expect(worktrees(repo)).toEqual([repo]);
});

test("the kept branch with the user's own commits on top of the agent's is still ours: attached again", async () => {
  const first = ok(await op("create", "w1", { input: input(), options: t.options }));
  const agent = commitIn(first.placement.cwd, "agent.txt", "agent work");
  ok(await op("destroy", "w1", { options: t.options }));
  git(repo, "checkout", "-q", "agent/w1");
  const review = commitIn(repo, "review.txt", "the user's review fix");
  git(repo, "checkout", "-q", "main");
  expect(git(repo, "merge-base", "--is-ancestor", agent, review) === "").toBe(true);

  const again = ok(await op("create", "w1", { input: input(), options: t.options }));
  expect(git(again.placement.cwd, "rev-parse", "HEAD")).toBe(review);
});
