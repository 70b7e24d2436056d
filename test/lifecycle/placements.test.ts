/** Each placement on each source, and relativeCwd / subdirectory confinement. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { basename, join } from "node:path";
import { create, createInput, ok, op } from "../support/operation.ts";
import { ownedEntries, records } from "../support/store.ts";
import type { Lab } from "../../kit/scratch.ts";
import { repoLab, branches, git, makeRemote, worktrees } from "../support/git.ts";

let t: Lab;
let repo: string;
let url: string;
beforeEach(() => {
  ({ t, repo } = repoLab());
  url = makeRemote(repo, join(t.dir, "remote.git"));
  git(repo, "remote", "add", "origin", url);
});
afterEach(() => t.cleanup());

const host = () => ({ kind: "host-directory", path: repo });
const sha = (ref: string) => git(repo, "rev-parse", ref);

/** Asserts a worktree of `repo` at the workspace root, on `branch`, inside the runtime home. */
function expectWorktree(json: any, branch: string, slug: string) {
  const root: string = json.placement.cwd;
  expect(root.startsWith(join(t.home, "workspaces") + "/")).toBe(true);
  expect(basename(root)).toMatch(new RegExp(`^${slug}-[0-9a-f]{8}$`));
  expect(worktrees(repo)).toEqual([repo, root]);
  expect(git(root, "symbolic-ref", "--short", "HEAD")).toBe(branch);
  expect(json.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe(branch);
  return root;
}

describe("host-directory: placements become git worktrees in owned storage", () => {
  test("branch: a new branch from baseRef, worktree named after the slug", async () => {
    const json = ok(await create(t.options, createInput("w1", host(), { kind: "branch", branchName: "topic", baseRef: "feature", worktreeSlug: "My Topic!" })));
    const root = expectWorktree(json, "topic", "My-Topic");
    expect(git(root, "rev-parse", "HEAD")).toBe(sha("feature"));
    expect(readFileSync(join(root, "feature.txt"), "utf8")).toBe("feature\n");
  });

  test("branch: the slug defaults to the workspace id, sanitized", async () => {
    const json = ok(await create(t.options, createInput("../evil/id", host(), { kind: "branch", branchName: "topic", baseRef: "main" })));
    expectWorktree(json, "topic", "evil-id");
  });

  test("branch: an existing branch name is an error that names it, and nothing is left", async () => {
    const result = await create(t.options, createInput("w1", host(), { kind: "branch", branchName: "feature", baseRef: "main" }));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('branch "feature" already exists');
    expect(ownedEntries(t.home)).toEqual([]);
    expect(records(t.home)).toEqual([]);
    expect(worktrees(repo)).toEqual([repo]);
  });

  test("branch: an unknown baseRef fails naming it; the branch is not created", async () => {
    const result = await create(t.options, createInput("w1", host(), { kind: "branch", branchName: "topic", baseRef: "nope" }));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('base ref "nope"');
    expect(branches(repo)).toEqual(["feature", "main"]);
    expect(ownedEntries(t.home)).toEqual([]);
  });

  test("checkout: an existing branch", async () => {
    const json = ok(await create(t.options, createInput("w1", host(), { kind: "checkout", ref: "feature", worktreeSlug: "co" })));
    expectWorktree(json, "feature", "co");
  });

  test("checkout: the branch checked out in the main worktree fails with git's reason, nothing left", async () => {
    const result = await create(t.options, createInput("w1", host(), { kind: "checkout", ref: "main" }));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("git worktree add");
    expect(result.stderr).toContain("already checked out");
    expect(ownedEntries(t.home)).toEqual([]);
    expect(worktrees(repo)).toEqual([repo]);
  });

  test("resolved-worktree branch-off and checkout-branch", async () => {
    const off = ok(await create(t.options, createInput("w1", host(), { kind: "resolved-worktree", source: { kind: "branch-off", baseBranch: "main", branchName: "off" }, worktreeSlug: "off" })));
    expect(git(off.placement.cwd, "rev-parse", "HEAD")).toBe(sha("main"));
    expect(off.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("off");
    const co = ok(await create(t.options, createInput("w2", host(), { kind: "resolved-worktree", source: { kind: "checkout-branch", branchName: "feature" }, worktreeSlug: "co" })));
    expect(co.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("feature");
    expect(worktrees(repo)).toHaveLength(3);
  });

  test("resolved-worktree checkout-github-pr: checkoutRefs fetched from the remote into localBranchName", async () => {
    const source = { kind: "checkout-github-pr", githubPrNumber: 7, headRef: "feature", baseRefName: "main", checkoutRefs: [{ remoteName: "origin", remoteRef: "refs/pull/7/head" }], localBranchName: "pr-7" };
    const json = ok(await create(t.options, createInput("w1", host(), { kind: "resolved-worktree", source, worktreeSlug: "pr-7" })));
    const root = expectWorktree(json, "pr-7", "pr-7");
    expect(git(root, "rev-parse", "HEAD")).toBe(sha("feature"));
  });

  test("resolved-worktree checkout-change-request: headRef from origin into a branch named after it", async () => {
    git(repo, "branch", "-D", "feature");
    const source = { kind: "checkout-change-request", forge: "gitlab", changeRequestNumber: 3, headRef: "feature", baseRefName: "main" };
    const json = ok(await create(t.options, createInput("w1", host(), { kind: "resolved-worktree", source, worktreeSlug: "cr" })));
    expectWorktree(json, "feature", "cr");
  });

  test("a change request whose ref cannot be fetched fails quoting git, and leaves no branch", async () => {
    const source = { kind: "checkout-github-pr", headRef: "gone", baseRefName: "main", localBranchName: "pr-9" };
    const result = await create(t.options, createInput("w1", host(), { kind: "resolved-worktree", source, worktreeSlug: "pr-9" }));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("could not fetch origin gone");
    expect(branches(repo)).toEqual(["feature", "main"]);
    expect(ownedEntries(t.home)).toEqual([]);
  });

  test("a change request into an existing local branch fast-forwards it; a diverged one is refused", async () => {
    git(repo, "branch", "pr-7", "main");
    const pr = (localBranchName: string) => ({ kind: "checkout-github-pr", headRef: "feature", baseRefName: "main", checkoutRefs: [{ remoteRef: "refs/pull/7/head" }], localBranchName });
    const json = ok(await create(t.options, createInput("w1", host(), { kind: "resolved-worktree", source: pr("pr-7"), worktreeSlug: "ff" })));
    expect(git(json.placement.cwd, "rev-parse", "HEAD")).toBe(sha("feature"));

    git(repo, "checkout", "-q", "-b", "diverged", "main");
    git(repo, "commit", "-q", "--allow-empty", "-m", "elsewhere");
    git(repo, "checkout", "-q", "main");
    const before = sha("diverged");
    const result = await create(t.options, createInput("w2", host(), { kind: "resolved-worktree", source: pr("diverged"), worktreeSlug: "div" }));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('branch "diverged"');
    expect(result.stderr).toContain("has diverged");
    expect(sha("diverged")).toBe(before);
    expect(git(repo, "for-each-ref", "refs/paseo-host-runtime")).toBe("");
    expect(worktrees(repo)).toHaveLength(2);
  });

  test("a source inside the repository maps to the same directory in the worktree", async () => {
    const json = ok(await create(t.options, createInput("w1", { kind: "host-directory", path: join(repo, "app") }, { kind: "branch", branchName: "topic", baseRef: "main", relativeCwd: "nested" })));
    expect(json.placement.cwd).toMatch(/\/app\/nested$/);
    expect(readFileSync(join(json.placement.cwd, "deep.txt"), "utf8")).toBe("deep\n");
    expect(worktrees(repo)[1]).toBe(join(json.placement.cwd, "..", ".."));
  });

  test("git ignores variables in the runtime's environment that would redirect it to another repository", async () => {
    const decoy = join(t.dir, "decoy");
    mkdirSync(decoy);
    git(decoy, "init", "-q", "-b", "decoy");
    const env = { GIT_DIR: join(decoy, ".git"), GIT_WORK_TREE: decoy, GIT_INDEX_FILE: join(decoy, "index"), GIT_COMMON_DIR: join(decoy, ".git"), GIT_CEILING_DIRECTORIES: t.dir };
    const result = await op("create", "w1", { input: createInput("w1", host(), { kind: "branch", branchName: "topic", baseRef: "feature" }), options: t.options }, env);
    expect(result.code, result.stderr).toBe(0);
    expectWorktree(result.json, "topic", "w1");
    expect(existsSync(join(decoy, ".git", "worktrees"))).toBe(false);
  });

  test("a host directory that is not a git repository cannot take a worktree placement", async () => {
    const plain = join(t.dir, "plain");
    mkdirSync(plain);
    const result = await create(t.options, createInput("w1", { kind: "host-directory", path: plain }, { kind: "branch", branchName: "x", baseRef: "main" }));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("is not inside a git working tree");
    expect(records(t.home)).toEqual([]);
  });
});

describe("git URL source: placements apply inside the private clone", () => {
  const gitSource = () => ({ kind: "git", url, revision: "" });

  test("branch: a new branch from a remote branch", async () => {
    const json = ok(await create(t.options, createInput("w1", gitSource(), { kind: "branch", branchName: "topic", baseRef: "feature" })));
    expect(git(json.placement.cwd, "rev-parse", "HEAD")).toBe(sha("feature"));
    expect(json.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("topic");
    expect(worktrees(repo)).toEqual([repo]);
    expect(branches(repo)).toEqual(["feature", "main"]);
  });

  test("checkout and resolved-worktree checkout-branch of a remote branch", async () => {
    const a = ok(await create(t.options, createInput("w1", gitSource(), { kind: "checkout", ref: "feature" })));
    expect(a.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("feature");
    expect(existsSync(join(a.placement.cwd, "feature.txt"))).toBe(true);
    const b = ok(await create(t.options, createInput("w2", gitSource(), { kind: "resolved-worktree", source: { kind: "checkout-branch", branchName: "feature" }, worktreeSlug: "b" })));
    expect(b.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("feature");
  });

  test("resolved-worktree branch-off and a GitHub PR ref", async () => {
    const off = ok(await create(t.options, createInput("w1", gitSource(), { kind: "resolved-worktree", source: { kind: "branch-off", baseBranch: "main", branchName: "off" }, worktreeSlug: "off" })));
    expect(off.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("off");
    const pr = { kind: "checkout-github-pr", headRef: "feature", baseRefName: "main", checkoutRefs: [{ remoteRef: "refs/pull/7/head" }], localBranchName: "pr-7" };
    const json = ok(await create(t.options, createInput("w2", gitSource(), { kind: "resolved-worktree", source: pr, worktreeSlug: "pr" })));
    expect(git(json.placement.cwd, "rev-parse", "HEAD")).toBe(sha("feature"));
    expect(json.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("pr-7");
  });
});

describe("relativeCwd and subdirectory stay inside the workspace", () => {
  const escapes: [string, string, string][] = [
    ["a .. escape", "../outside", "must stay inside the workspace"],
    ["a .. in the middle", "app/../../outside", "must stay inside the workspace"],
    ["an absolute path", "/tmp", "absolute path"],
    ["a NUL byte", "app\u0000x", "NUL"],
    ["a symlink out", "escape", "symlinks are refused"],
    ["a symlink that stays inside", "app-link", "symlinks are refused"],
    ["a path through a symlink", "app-link/nested", "goes through the symlink"],
    ["a missing directory", "no/such/dir", "does not exist"],
    ["a file", "README.md", "is not a directory"],
  ];

  for (const [name, relativeCwd, message] of escapes) {
    test(`relativeCwd with ${name} is rejected, nothing left (adopt, clone and worktree)`, async () => {
      symlinkSync(t.dir, join(repo, "escape"));
      symlinkSync("app", join(repo, "app-link"));
      git(repo, "add", "escape", "app-link");
      git(repo, "commit", "-q", "-m", "symlinks");
      for (const [options, placement] of [
        [t.options, { kind: "existing", relativeCwd }],
        [{ ...t.options, hostDirectory: "clone" }, { kind: "existing", relativeCwd }],
        [t.options, { kind: "branch", branchName: "topic", baseRef: "main", relativeCwd }],
      ] as const) {
        const result = await create(options, createInput("w1", host(), placement));
        expect(result.code).toBe(1);
        expect(result.stdout).toBe("");
        expect(result.stderr).toContain(message);
        expect(ownedEntries(t.home)).toEqual([]);
        expect(records(t.home)).toEqual([]);
      }
      expect(worktrees(repo)).toEqual([repo]);
      expect(branches(repo)).toEqual(["feature", "main"]);
    });
  }

  test("subdirectory escapes of a git URL source are rejected, nothing left", async () => {
    symlinkSync("/etc", join(repo, "etc-link"));
    git(repo, "add", "etc-link");
    git(repo, "commit", "-q", "-m", "symlink");
    git(join(t.dir, "remote.git"), "fetch", "-q", repo, "+main:main");
    for (const [subdirectory, message] of [
      ["..", "must stay inside the workspace"],
      ["/etc", "absolute path"],
      ["etc-link", "symlinks are refused"],
    ] as const) {
      const result = await create(t.options, createInput("w1", { kind: "git", url, revision: "", subdirectory }));
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("subdirectory");
      expect(result.stderr).toContain(message);
      expect(ownedEntries(t.home)).toEqual([]);
      expect(records(t.home)).toEqual([]);
    }
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection).toEqual({ status: "missing" });
  });
});
