/**
 * The sandbox's git bridge, attacked a fourth time (issue 30), against the compiled binary:
 * nothing the agent commits is lost when a sync fails (destroy brings it out first, or stops
 * and keeps it); a worktree is guarded against the workload's submodules like an adopted
 * checkout; a flood of branches and tags neither holds `exit` nor destroy, and every branch
 * lands; both sides' staged work is kept. Each failed on 6454bd8.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { runBinary } from "../../kit/binary.ts";
import { lab, tempDir, type Lab } from "../../kit/scratch.ts";
import { tryLockExclusive } from "../../src/platform/libc/locks.ts";
import { isLinux } from "../../src/platform/os.ts";
import { git, makeRepo } from "../support/git.ts";
import { create, createInput, destroyed, ok, op } from "../support/operation.ts";
import { skipBecause } from "../support/platform.ts";
import { hostGit, sandboxGitKit, workspaceRef } from "../support/sandbox-git.ts";
import { missingTools } from "../support/tools.ts";

const missing = missingTools("sandbox-git-kept.test.ts", ["bwrap", "git"]);
const STRESS = process.env.PASEO_STRESS === "1";

/** Why this machine cannot mount a tmpfs for a test (decided once, when the file loads), or null. */
const UNMOUNTABLE: string | null = (() => {
  if (!isLinux) return "tmpfs mounts are a Linux test";
  const probe = tempDir("phr-kept-probe-");
  try {
    const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", probe.path], { stderr: "pipe" });
    if (mounted.exitCode !== 0) return `cannot mount a tmpfs (${mounted.stderr.toString().trim() || `exit ${mounted.exitCode}`})`;
    Bun.spawnSync(["umount", probe.path]);
    return null;
  } finally {
    probe.cleanup();
  }
})();
const noTmpfs = skipBecause("exec/sandbox-git-kept.test.ts, a full disk under the sandbox's git", UNMOUNTABLE);

let t: Lab;
const { sandboxed, sh, logged } = sandboxGitKit(() => t);
let mounts: string[] = [];
let repo: string;

beforeEach(() => {
  t = lab("phr-sbx-kept-");
  mounts = [];
});
afterEach(async () => {
  try {
    await destroyed("w", sandboxed());
  } finally {
    for (const mount of mounts.reverse()) Bun.spawnSync(["umount", "-l", mount]);
    t.cleanup();
  }
});

/** A tmpfs of `size` at `dir`, unmounted by afterEach. */
function tmpfs(dir: string, size: string): string {
  mkdirSync(dir, { recursive: true });
  const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stderr: "pipe" });
  if (mounted.exitCode !== 0) throw new Error(`mount tmpfs at ${dir}: ${mounted.stderr.toString()}`);
  mounts.push(dir);
  return dir;
}

/** `dir` bound onto itself read-only (EROFS for root too), unmounted by afterEach if the test does not first. */
function readOnly(dir: string): string {
  for (const argv of [["mount", "--bind", dir, dir], ["mount", "-o", "remount,bind,ro", dir]]) {
    const mounted = Bun.spawnSync(argv, { stderr: "pipe" });
    if (mounted.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${mounted.stderr.toString()}`);
  }
  mounts.push(dir);
  return dir;
}

function unmount(dir: string): void {
  const done = Bun.spawnSync(["umount", dir], { stderr: "pipe" });
  if (done.exitCode !== 0) throw new Error(`umount ${dir}: ${done.stderr.toString()}`);
  mounts = mounts.filter((mount) => mount !== dir);
}

/** Whether `commit` is in the user's repository and some ref there reaches it. */
function reachable(commit: string): boolean {
  const type = Bun.spawnSync(["git", "-C", repo, "cat-file", "-t", commit], { stderr: "ignore" }).stdout.toString().trim();
  return type === "commit" && git(repo, "for-each-ref", "--contains", commit) !== "";
}

const topic = () => createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" });
const ls = async () => JSON.parse((await runBinary(["ls", "--json", "--home", t.home])).stdout) as { workspaces: Record<string, unknown>[] };

describe.skipIf(missing.length > 0 || noTmpfs)("nothing the agent commits is lost when a sync fails", () => {
  test("the runtime home's disk filled by the workload's build output: the sync after the exec fails, destroy brings the commits into the user's repository first", async () => {
    const small = tmpfs(join(t.dir, "small"), "48m");
    repo = makeRepo(join(t.dir, "repo"));
    const options = sandboxed({ stateDirectory: join(small, "home") });
    ok(await create(options, topic()));
    const made = await sh("w", "echo work > work.txt && git add work.txt && git commit -q -m work && git rev-parse HEAD && (cat /dev/zero > build.out 2>/dev/null; true)", options);
    expect(made.code).toBe(0);
    const commit = made.stdout.toString().trim();
    // The sync found no room: the user's branch is where it was, and the commit in no ref of theirs.
    expect(git(repo, "rev-parse", "topic")).toBe(git(repo, "rev-parse", "main"));
    expect(reachable(commit)).toBe(false);
    const answer = await op("destroy", "w", { options });
    expect(answer.stderr).toBe("");
    expect(answer.code).toBe(0);
    expect(reachable(commit)).toBe(true);
  });

  test("a sync that keeps failing (the user's objects cannot be written: a read-only mount): ls shows it, destroy stops unfinished keeping the private git dir and saying what to do; once fixed, destroy brings the commits", async () => {
    repo = makeRepo(join(t.dir, "repo"));
    ok(await create(sandboxed(), topic()));
    const objects = readOnly(join(repo, ".git", "objects"));
    const made = await sh("w", "echo work > work.txt && git add work.txt && git commit -q -m work && git rev-parse HEAD");
    expect(made.code).toBe(0);
    const commit = made.stdout.toString().trim();
    expect(reachable(commit)).toBe(false);
    const listed = (await ls()).workspaces.find((w) => w.workspaceId === "w")!;
    expect(listed.gitSyncProblem).toEqual(expect.stringContaining("could not be brought into"));
    const text = await runBinary(["ls", "--home", t.home]);
    expect(text.stdout).toContain("! w: the work of its sandbox's git is not in your repository yet");
    // A second exec retries first (and fails again); it still runs.
    expect((await sh("w", "true")).code).toBe(0);
    const stopped = await op("destroy", "w", { options: sandboxed() });
    expect(stopped.code).not.toBe(0);
    const privateGit = readdirSync(join(t.home, "workspaces")).map((key) => join(t.home, "workspaces", key, "git")).find(existsSync)!;
    expect(stopped.stderr).toContain(`rm -rf ${privateGit}`);
    expect(stopped.stderr).toContain("destroy the workspace again once that is fixed");
    const inspected = ok(await op("inspect", "w", { options: sandboxed() }));
    expect(inspected.inspection).toMatchObject({ status: "error", message: expect.stringContaining("could not be brought there") });
    expect(existsSync(privateGit)).toBe(true);
    unmount(objects);
    ok(await op("destroy", "w", { options: sandboxed() }));
    expect(reachable(commit)).toBe(true);
    expect(existsSync(privateGit)).toBe(false);
  });
});

describe.skipIf(missing.length > 0)("a worktree is guarded against the workload's submodules as an adopted checkout is", () => {
  let marks: string;
  beforeEach(() => {
    marks = join(t.dir, "marks");
    mkdirSync(marks);
  });
  const fsmonitor = () => `git config core.fsmonitor "touch ${marks}/fsmonitor 2>/dev/null; false"`;

  test("a commit adding a gitlink to a repository the workload made: the branch does not move, nor the worktree's index, and the host's git status runs nothing", async () => {
    repo = makeRepo(join(t.dir, "repo"));
    const checkout: string = ok(await create(sandboxed(), topic())).placement.cwd;
    const before = git(repo, "rev-parse", "topic");
    const script = `mkdir evil && cd evil && git init -q && ${fsmonitor()} && git commit -q --allow-empty -m inner && cd .. && git add evil 2>/dev/null; git commit -q -m "add evil" && git rev-parse HEAD`;
    const made = await sh("w", script);
    expect(made.code).toBe(0);
    const commit = made.stdout.toString().trim();
    expect(git(repo, "rev-parse", "topic")).toBe(before);
    expect(git(repo, "rev-parse", workspaceRef("w", "refs/heads/topic"))).toBe(commit);
    expect(logged("git-branch-kept").at(-1)).toMatchObject({ branch: "topic", reason: expect.stringContaining('add a submodule at "evil"') });
    hostGit(checkout, "status");
    hostGit(checkout, "diff", "HEAD");
    expect(readdirSync(marks)).toEqual([]);
  });

  test("a worktree whose base has a submodule not checked out: its path is held read-only, so no .git of the workload's appears there for the host's git status", async () => {
    repo = makeRepo(join(t.dir, "repo"));
    const inner = makeRepo(join(t.dir, "inner"));
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", inner, "lib");
    git(repo, "commit", "-q", "-m", "lib");
    rmSync(join(repo, "lib"), { recursive: true });
    mkdirSync(join(repo, "lib"));
    const checkout: string = ok(await create(sandboxed(), topic())).placement.cwd;
    const planted = await sh("w", `cd lib && git init -q 2>/dev/null && ${fsmonitor()} && echo planted`);
    expect(planted.stdout.toString()).not.toContain("planted");
    hostGit(checkout, "status");
    expect(readdirSync(marks)).toEqual([]);
    expect(existsSync(join(checkout, "lib", ".git"))).toBe(false);
  });
});

describe.skipIf(missing.length > 0)("a flood of branches and tags is bounded", () => {
  const [branches, tags] = STRESS ? [10_000, 10_000] : [1_200, 300];

  test(`${branches} branches and ${tags} tags made in one go: exit comes, each sync publishes at most 1000 refs and says what waits, the next exec brings the rest, every branch lands, destroy finishes`, async () => {
    repo = makeRepo(join(t.dir, "repo"));
    ok(await create(sandboxed(), topic()));
    const script = [
      "git commit -q --allow-empty -m flood && h=$(git rev-parse HEAD)",
      `{ i=0; while [ $i -lt ${branches} ]; do echo "create refs/heads/flood/b$i $h"; i=$((i+1)); done; i=0; while [ $i -lt ${tags} ]; do echo "create refs/tags/flood-t$i $h"; i=$((i+1)); done; } | git update-ref --stdin`,
      "echo $h",
    ].join(" && ");
    const made = await sh("w", script);
    expect(made.code).toBe(0);
    const commit = made.stdout.toString().trim();
    const landed = () => git(repo, "for-each-ref", "--format=%(objectname)", "refs/heads/flood/").split("\n").filter((id) => id === commit).length;
    expect(landed()).toBe(Math.min(branches, 1000));
    // The agent's own commit moved topic too: one branch more than the flood.
    expect(logged("git-sync-pending").at(-1)).toMatchObject({ published: 1000, pending: branches + 1 + tags - 1000 });
    // Each later sync brings the next 1000 (the one before this exec's launch included).
    for (let round = 0; round < Math.ceil((branches + tags) / 1000); round++) expect((await sh("w", "true")).code).toBe(0);
    expect(landed()).toBe(branches);
    expect(git(repo, "for-each-ref", "--format=%(refname)", `${workspaceRef("w", "refs/tags/")}`).split("\n").filter(Boolean)).toHaveLength(tags);
    ok(await op("destroy", "w", { options: sandboxed() }));
    // Released: the tags' commit is on the user's flood branches, so no namespace ref is needed.
    expect(git(repo, "for-each-ref", `refs/paseo-host-runtime/`)).toBe("");
  });

  test("destroy right after a flood of tags keeps the commit the syncs had not published yet (one ref for it, not one per tag)", async () => {
    repo = makeRepo(join(t.dir, "repo"));
    ok(await create(sandboxed(), topic()));
    const made = await sh("w", `git commit -q --allow-empty -m flood && h=$(git rev-parse HEAD) && { i=0; while [ $i -lt 1500 ]; do echo "create refs/tags/only-t$i $h"; i=$((i+1)); done; } | git update-ref --stdin && git reset -q --hard HEAD~1 && echo $h`);
    expect(made.code).toBe(0);
    const commit = made.stdout.toString().trim();
    expect(reachable(commit)).toBe(true);
    ok(await op("destroy", "w", { options: sandboxed() }));
    // The commit is on no branch: the 1000 tags the sync published stay, and of the 500 it had not, one ref keeps their commit.
    expect(git(repo, "for-each-ref", "--format=%(refname)", "refs/paseo-host-runtime/").split("\n").filter(Boolean)).toHaveLength(1001);
    expect(reachable(commit)).toBe(true);
    expect(logged("git-refs-saved").at(-1)).toMatchObject({ refs: 500, kept: 1 });
    expect(logged("git-refs-kept").at(-1)).toMatchObject({ more: 981 });
  });
});

describe.skipIf(missing.length > 0)("both sides' staged work is kept", () => {
  test("adopted checkout: the agent stages v1 and edits on, the user stages a file of their own; the next exec still has the agent's v1 staged and the user's index keeps theirs", async () => {
    repo = makeRepo(join(t.dir, "repo"));
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo })));
    expect((await sh("w", "echo v1 > a.txt && git add a.txt && echo v2 > a.txt")).code).toBe(0);
    Bun.write(join(repo, "u.txt"), "mine\n");
    await Bun.sleep(10);
    git(repo, "add", "u.txt");
    const staged = await sh("w", "git show :a.txt");
    expect(staged.stdout.toString()).toBe("v1\n");
    expect(git(repo, "ls-files", "--stage", "u.txt")).toContain("u.txt");
    expect(git(repo, "ls-files", "a.txt")).toBe("");
    expect(logged("git-index-kept")).toHaveLength(1);
  });

  test("adopted checkout: with nothing of the agent's staged, what the user stages reaches the workspace's index", async () => {
    repo = makeRepo(join(t.dir, "repo"));
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo })));
    expect((await sh("w", "git status --short >/dev/null")).code).toBe(0);
    await Bun.write(join(repo, "u.txt"), "mine\n");
    git(repo, "add", "u.txt");
    expect((await sh("w", "git show :u.txt")).stdout.toString()).toBe("mine\n");
  });
});

describe.skipIf(missing.length > 0)("destroy's wait for the git lock is bounded", () => {
  test("a sync holding the workspace's git lock past the bound: destroy stops unfinished, naming the lock, and the next destroy finishes", async () => {
    repo = makeRepo(join(t.dir, "repo"));
    ok(await create(sandboxed(), topic()));
    expect((await sh("w", "git commit -q --allow-empty -m x")).code).toBe(0);
    const lock = readdirSync(join(t.home, "workspaces")).map((key) => join(t.home, "workspaces", key, "git.lock")).find(existsSync)!;
    const held = openSync(lock, "r");
    try {
      expect(tryLockExclusive(held)).toBe(true);
      const stopped = await op("destroy", "w", { options: sandboxed() });
      expect(stopped.code).not.toBe(0);
      expect(stopped.stderr).toContain(`the git lock ${lock}`);
      expect(ok(await op("inspect", "w", { options: sandboxed() })).inspection.status).toBe("error");
    } finally {
      closeSync(held);
    }
    ok(await op("destroy", "w", { options: sandboxed() }));
  });
});
