/**
 * A branch placement can be created again after destroy (issue 23). destroy keeps the branch a
 * create made (it holds the agent's commits); the daemon re-creates workspaces (restore after
 * archive, a retried create after a crash between its destroy and create). Created again with
 * the same workspace id and branch, the workspace gets a new worktree on that branch, commits
 * included, and says it made fresh content. Any other existing branch is refused as before.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInput, later, ok, op, response } from "../support/operation.ts";
import type { Lab } from "../../kit/scratch.ts";
import { repoLab, git, worktrees } from "../support/git.ts";

let t: Lab;
let repo: string;
beforeEach(() => ({ t, repo } = repoLab("phr-recreate-")));
afterEach(() => t.cleanup());

type Dialect = "seed" | "later";

function calls(dialect: Dialect, options = t.options) {
  const body = (fields: Record<string, unknown>) => (dialect === "later" ? later({ ...fields, options }) : { ...fields, options });
  const input = (id: string, branch: string, placement: Record<string, unknown> = {}) =>
    createInput(id, { kind: dialect === "later" ? "directory" : "host-directory", path: repo }, { kind: "branch", branchName: branch, baseRef: "main", ...placement });
  return {
    create: (id: string, branch: string) => op("create", id, body({ input: input(id, branch) })),
    destroy: (id: string) => op("destroy", id, body({})),
  };
}

/** The agent's work on the workspace's branch: one commit. */
function commitIn(root: string, text: string): string {
  writeFileSync(join(root, "agent.txt"), text);
  git(root, "add", "agent.txt");
  git(root, "commit", "-q", "-m", "agent work");
  return git(root, "rev-parse", "HEAD");
}

describe.each(["seed", "later"] as Dialect[])("branch placement → destroy → create again (%s dialect)", (dialect) => {
  test("the same workspace id and branch get a new worktree on the branch, its commits kept", async () => {
    const daemon = calls(dialect);
    const first = response(await daemon.create("w1", "agent/w1"), dialect);
    const commit = commitIn(first.placement.cwd, "kept\n");
    ok(await daemon.destroy("w1"));
    expect(worktrees(repo)).toEqual([repo]);
    expect(git(repo, "rev-parse", "agent/w1")).toBe(commit);

    const again = response(await daemon.create("w1", "agent/w1"), dialect);
    if (dialect === "later") expect(again.materializedFreshContent).toBe(true);
    else expect(again.materializedFreshContent).toBeUndefined();
    expect(again.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("agent/w1");
    expect(readFileSync(join(again.placement.cwd, "agent.txt"), "utf8")).toBe("kept\n");
    expect(git(again.placement.cwd, "rev-parse", "HEAD")).toBe(commit);
    expect(worktrees(repo)).toEqual([repo, again.placement.cwd]);
    // The repeat create of a created workspace still answers what it found.
    const repeat = response(await daemon.create("w1", "agent/w1"), dialect);
    if (dialect === "later") expect(repeat.materializedFreshContent).toBe(false);
    // And it can go round once more.
    ok(await daemon.destroy("w1"));
    ok(await daemon.create("w1", "agent/w1"));
    expect(git(repo, "rev-parse", "agent/w1")).toBe(commit);
  });
});

describe("any other existing branch is refused as before", () => {
  test("another workspace id, another owner, a branch checked out elsewhere, or a branch made anew by someone else", async () => {
    const daemon = calls("seed");
    ok(await daemon.create("w1", "agent/w1"));
    ok(await daemon.destroy("w1"));
    const refusal = `branch "agent/w1" already exists in ${repo}`;

    const otherId = await daemon.create("w2", "agent/w1");
    expect(otherId.code).toBe(1);
    expect(otherId.stderr).toContain(refusal);

    const otherOwner = await calls("seed", { ...t.options, owner: "someone-else" }).create("w1", "agent/w1");
    expect(otherOwner.code).toBe(1);
    expect(otherOwner.stderr).toContain(refusal);

    git(repo, "checkout", "-q", "agent/w1");
    const checkedOut = await daemon.create("w1", "agent/w1");
    expect(checkedOut.code).toBe(1);
    expect(checkedOut.stderr).toContain(refusal);
    git(repo, "checkout", "-q", "main");

    // Deleted and made again from a commit the original never had: not the branch we made.
    git(repo, "branch", "-q", "-D", "agent/w1");
    git(repo, "checkout", "-q", "--orphan", "unrelated");
    git(repo, "commit", "-q", "--allow-empty", "-m", "unrelated root");
    git(repo, "branch", "-q", "agent/w1");
    git(repo, "checkout", "-q", "main");
    const remade = await daemon.create("w1", "agent/w1");
    expect(remade.code).toBe(1);
    expect(remade.stderr).toContain(refusal);
    expect(worktrees(repo)).toEqual([repo]);
  });

  test("a failed create on the kept branch leaves the branch and its commits alone", async () => {
    const daemon = calls("seed");
    const first = ok(await daemon.create("w1", "agent/w1"));
    const commit = commitIn(first.placement.cwd, "kept\n");
    ok(await daemon.destroy("w1"));
    // relativeCwd that does not exist: the worktree is made, then the create fails and is undone.
    const input = createInput("w1", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "agent/w1", baseRef: "main", relativeCwd: "no-such-dir" });
    const failed = await op("create", "w1", { input, options: t.options });
    expect(failed.code).toBe(1);
    expect(git(repo, "rev-parse", "agent/w1")).toBe(commit);
    expect(worktrees(repo)).toEqual([repo]);
    ok(await daemon.create("w1", "agent/w1"));
  });
});
