/**
 * The sandbox keeps the operator's git (issue 22): what a sandboxed workload writes is never
 * read by a git command run outside the sandbox as configuration, hooks, attributes, pointers,
 * alternates, another worktree's admin files or the user's HEAD and index. Each attack is tried
 * against an adopted checkout, a worktree and a clone; the host's own `git status`, `git commit`
 * and `git submodule update` then run nothing of it, and the user's git files are unchanged.
 * Every test here failed against the binds before the private git directory (the common git
 * directory read-write with a denylist, an adopted `.git` read-write, a clone sharing the
 * user's object files through hardlinks).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { missingTools } from "../support/tools.ts";
import { GIT_TEST_ENV, git, makeRepo } from "../support/git.ts";
import { create, createInput, destroyed, ok, op } from "../support/operation.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { AGENT_IDENTITY, hostGit, sandboxGitKit, workspaceRef } from "../support/sandbox-git.ts";

const missing = missingTools("sandbox-git.test.ts", ["bwrap", "git"]);

let t: Lab;
const { sandboxed, sh, logged, givenUp } = sandboxGitKit(() => t);
let repo: string;
/** Where a command planted by the workload leaves a mark when the host's git runs it. */
let marks: string;

beforeEach(() => {
  t = lab("phr-sbx-git-");
  marks = join(t.dir, "marks");
  mkdirSync(marks);
  repo = userRepository(t.dir, marks);
});
afterEach(async () => {
  try {
    await destroyed("w", sandboxed());
  } finally {
    t.cleanup();
  }
});

/**
 * The operator's repository as an attack meets it: per-worktree config on (config.worktree is
 * read), a clean filter of the operator's own that leaves a mark (attributes select it), a
 * second worktree of theirs, and a submodule not initialized yet (modules/ would be adopted).
 */
function userRepository(dir: string, marksDir: string): string {
  const sub = makeRepo(join(dir, "subsource"));
  const root = makeRepo(join(dir, "repo"));
  git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sub");
  git(root, "commit", "-qm", "add sub");
  git(root, "submodule", "deinit", "-q", "-f", "sub");
  git(root, "config", "extensions.worktreeConfig", "true");
  git(root, "config", "filter.probe.clean", `sh -c 'touch ${marksDir}/attributes; cat'`);
  git(root, "worktree", "add", "-q", join(dir, "theirs"), "feature");
  return root;
}

/** Where the workload plants: the user's common git dir, their other worktree's admin dir, the workspace's own registration (worktrees), a directory of its own. */
interface Targets {
  common: string;
  gitDir: string | null;
  theirs: string;
  evil: string;
  /** The user's submodule directory in an adopted checkout: the superproject's `git status` follows its `.git`. */
  submodule?: string;
}

/**
 * The plants, in rounds that do not undo each other (a `commondir` pointer would hide a planted
 * config, a garbage index would stop git before it runs anything): what git reads as config or
 * hooks, then as pointers, then the user's own checkout state. Every plant is tried; none may
 * stop the others.
 */
function plantRounds(targets: Targets): string[] {
  const { common, gitDir, theirs, evil, submodule } = targets;
  const fsmonitor = (file: string, mark: string) => `git config --file ${file} core.fsmonitor "touch ${marks}/${mark}; false"`;
  const hook = (name: string) => `printf '#!/bin/sh\\ntouch ${marks}/hook-${name}\\n' > ${common}/hooks/${name} && chmod +x ${common}/hooks/${name}`;
  // A git dir of the workload's own whose config runs a command: what every pointer below names.
  const own = (name: string) => `git init -q --bare ${evil}/${name} && ${fsmonitor(`${evil}/${name}/config`, name)} && echo ${evil}/${name}`;
  const rounds = [
    [
      fsmonitor(`${common}/config`, "config"),
      fsmonitor(`${common}/config.worktree`, "config-worktree"),
      hook("post-commit"),
      hook("pre-commit"),
      `echo '* filter=probe' > ${common}/info/attributes`,
      `git init -q --bare ${common}/modules/sub && ${fsmonitor(`${common}/modules/sub/config`, "modules")}`,
      fsmonitor(`${theirs}/config.worktree`, "their-config-worktree"),
      ...(gitDir === null ? [] : [fsmonitor(`${gitDir}/config.worktree`, "own-config-worktree")]),
    ],
    [
      `mkdir -p ${evil}`,
      `${own("commondir")} > ${common}/commondir`,
      `${own("their-commondir")} > ${theirs}/commondir`,
      `echo ${evil}/objects > ${common}/objects/info/alternates`,
      ...(gitDir === null ? [] : [`${own("own-commondir")} > ${gitDir}/commondir`]),
      ...(submodule === undefined ? [] : [`git init -q ${evil}/sub && ${fsmonitor(`${evil}/sub/.git/config`, "submodule")} && echo "gitdir: ${evil}/sub/.git" > ${submodule}/.git`]),
    ],
    [
      `echo 'ref: refs/heads/feature' > ${common}/HEAD`,
      `echo garbage > ${common}/index`,
      `echo 'ref: refs/heads/main' > ${theirs}/HEAD`,
      `echo ${evil} > ${theirs}/gitdir`,
      ...(gitDir === null ? [] : [`echo ${evil} > ${gitDir}/gitdir`, `echo garbage > ${gitDir}/index`]),
    ],
  ];
  return rounds.map((lines) => `${lines.map((line) => `{ ${line}; } 2>/dev/null`).join("\n")}\ntrue`);
}

/**
 * Each round of plants from inside the sandbox, then the operator's git on the host: the
 * user's git files must be exactly as before, and nothing planted may have run.
 */
async function attack(targets: Targets, hostDirs: string[], options = sandboxed()): Promise<void> {
  const common = join(repo, ".git");
  for (const script of plantRounds(targets)) {
    const before = snapshot(common);
    const result = await sh("w", script, options);
    expect(result.code).toBe(0);
    expect(changed(before, snapshot(common))).toEqual([]);
    operatorGit(hostDirs);
    expect(readdirSync(marks)).toEqual([]);
  }
}

/** Every file of the user's git directories: path → content digest. */
function snapshot(common: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const stat = statSync(path, { throwIfNoEntry: false });
      if (stat?.isDirectory()) walk(path);
      else if (stat) files.set(path, new Bun.CryptoHasher("sha256").update(readFileSync(path)).digest("hex"));
    }
  };
  walk(common);
  return files;
}

/** What changed between two snapshots (added, removed or rewritten files). */
function changed(before: Map<string, string>, after: Map<string, string>): string[] {
  const paths = new Set([...before.keys(), ...after.keys()]);
  return [...paths].filter((path) => before.get(path) !== after.get(path)).sort();
}

/** The operator's ordinary git: status everywhere, a commit, the submodule brought in. */
function operatorGit(dirs: string[]): void {
  for (const dir of dirs) hostGit(dir, "status");
  writeFileSync(join(repo, "README.md"), `edited ${Math.random()}\n`);
  hostGit(repo, "commit", "-qam", "the operator's commit");
  hostGit(repo, "-c", "protocol.file.allow=always", "submodule", "update", "--init");
}

const theirAdmin = () => join(repo, ".git", "worktrees", "theirs");

describe.skipIf(missing.length > 0)("nothing a sandboxed workload writes runs on the host, nor changes the user's git files", () => {
  test("adopted checkout (existing placement): the user's .git is not the workload's", async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo })));
    await attack({ common: join(repo, ".git"), gitDir: null, theirs: theirAdmin(), evil: join(repo, ".evil"), submodule: join(repo, "sub") }, [repo, join(t.dir, "theirs")]);
    // What the attack planted leaves the private git dir unreadable to destroy's sync (git: "Invalid path"): finished by hand.
    await givenUp("w");
  });

  test("worktree placement: the repository's common git dir, the user's other worktree and the workspace's own registration", async () => {
    const json = ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const checkout: string = json.placement.cwd;
    const own = join(repo, ".git", "worktrees", checkout.split("/").at(-1)!);
    await attack({ common: join(repo, ".git"), gitDir: own, theirs: theirAdmin(), evil: join(checkout, ".evil") }, [repo, join(t.dir, "theirs"), checkout]);
  });

  test("clone of a host repository (hostDirectory clone): the clone shares no file with the user's repository", async () => {
    const options = sandboxed({ hostDirectory: "clone" });
    const json = ok(await create(options, createInput("w", { kind: "host-directory", path: repo })));
    const clone: string = json.placement.cwd;
    const before = snapshot(join(repo, ".git"));
    // Every object file of the clone rewritten in place: a hardlink would carry that into the user's repository.
    const overwrite = `find .git/objects -type f | while read -r f; do chmod u+w "$f" && printf garbage > "$f"; done`;
    expect((await sh("w", overwrite, options)).code).toBe(0);
    expect(changed(before, snapshot(join(repo, ".git")))).toEqual([]);
    expect(git(repo, "fsck", "--no-progress")).toBe("");
    // The clone's own git dir is the workload's to change: nothing of it reaches the user's repository either.
    await attack({ common: join(clone, ".git"), gitDir: null, theirs: join(clone, ".git", "worktrees", "x"), evil: join(clone, ".evil") }, [repo, join(t.dir, "theirs")], options);
  });
});

describe.skipIf(missing.length > 0)("the sandbox's own view of git", () => {
  test("adopted checkout with a submodule checked out: git status and git in the submodule work inside; the submodule is read-only there", async () => {
    git(repo, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q");
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo })));
    const result = await sh("w", "git status --porcelain --untracked-files=no; echo status $?; git -C sub log -1 --format=%s; { echo x >> sub/README.md; } 2>/dev/null || echo read-only");
    expect(result.stdout.toString()).toBe("status 0\nfirst\nread-only\n");
    expect(git(repo, "status", "--porcelain", "--untracked-files=no")).toBe("");
  });

  test("an adopted checkout whose .git the user removed: execs still run, and no .git is made in its place", async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo })));
    rmSync(join(repo, ".git"), { recursive: true, force: true });
    const result = await sh("w", "test -e .git && echo has-git || echo no-git");
    expect(result.stdout.toString()).toBe("no-git\n");
    expect(existsSync(join(repo, ".git"))).toBe(false);
  });

  test("the user's objects are read-only inside; the workspace's own git dir is not the user's", async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const objects = join(repo, ".git", "objects");
    const loose = readdirSync(objects).find((name) => /^[0-9a-f]{2}$/.test(name))!;
    const script = `touch ${objects}/${loose}/x 2>/dev/null && echo wrote || echo refused; test "$(git rev-parse --git-common-dir)" != ${join(repo, ".git")} && echo private`;
    const result = await sh("w", script);
    expect(result.stdout.toString()).toBe("refused\nprivate\n");
    expect(existsSync(join(objects, loose, "x"))).toBe(false);
  });
});

/** An exec whose refs in the user's repository are read the moment its `exit` event arrives. */
async function shAtExit(workspaceId: string, script: string, look: () => Record<string, string | null>, options = sandboxed()) {
  const handle = startExec(workspaceId, envelope(["/bin/sh", "-c", script], { options, env: { PATH, ...AGENT_IDENTITY } }));
  handle.closeStdin();
  const seen = handle.waitEvent("exit").then(look);
  const result = await handle.done;
  return { result, atExit: await seen };
}

/** The value of `ref` in `dir`'s repository, or null. */
function refOf(dir: string, ref: string): string | null {
  const result = Bun.spawnSync({ cmd: ["git", "rev-parse", "-q", "--verify", ref], cwd: dir, env: { ...process.env, ...GIT_TEST_ENV }, stdout: "pipe", stderr: "ignore" });
  return result.exitCode === 0 ? result.stdout.toString().trim() : null;
}

const namespace = (ref: string) => workspaceRef("w", ref);

describe.skipIf(missing.length > 0)("the agent still does its work, and its work reaches the user's repository", () => {
  test("worktree: commit, amend, stash, branch and rebase inside; the branch and its commits are in the user's repository when exit is written", async () => {
    const json = ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const checkout: string = json.placement.cwd;
    // The user moves on in their own checkout meanwhile: the workspace sees it at its next exec.
    writeFileSync(join(repo, "theirs.txt"), "the user's\n");
    git(repo, "add", "theirs.txt");
    git(repo, "commit", "-qm", "the user's commit");
    const script = [
      "git status --porcelain",
      "echo one > agent.txt && git add agent.txt && git commit -qm 'agent: one'",
      "git commit -q --amend -m 'agent: one, amended'",
      "echo wip > wip.txt && git stash -q -u && git stash list | wc -l",
      "git rebase -q main",
      "git checkout -q -b side && echo side > side.txt && git add side.txt && git commit -qm 'agent: side' && git checkout -q topic",
      "git log --format=%s",
      "git rev-parse topic side",
    ].join(" && ");
    const { result, atExit } = await shAtExit("w", script, () => ({ topic: refOf(repo, "topic"), side: refOf(repo, "side"), main: refOf(repo, "main") }));
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const lines = result.stdout.toString().trim().split("\n");
    // A clean status, one stash, the rebased history (the user's commit below the agent's), then topic and side.
    expect(lines.slice(0, -2)).toEqual(["1", "agent: one, amended", "the user's commit", "add sub", "first"]);
    const [topic, side] = lines.slice(-2);
    expect(atExit).toEqual({ topic: topic!, side: side!, main: git(repo, "rev-parse", "main") });
    expect(git(repo, "log", "-1", "--format=%s", "topic")).toBe("agent: one, amended");
    expect(git(repo, "merge-base", "--is-ancestor", "main", "topic")).toBe("");
    // The user's checkout of the worktree agrees with its branch: its index followed the move.
    expect(git(checkout, "status", "--porcelain")).toBe("");
    expect(logged("git-branch-moved").map((line) => line.branch).sort()).toEqual(["side", "topic"]);
    // Only what reached no branch stays under the workspace's namespace: the stash.
    expect(git(repo, "for-each-ref", "--format=%(refname)", "refs/paseo-host-runtime/")).toBe(namespace("refs/stash"));
  });

  test("a branch checked out elsewhere, or moved by the user meanwhile, is never moved: its commits are kept at the workspace's ref, and the log says why", async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const main = git(repo, "rev-parse", "main");
    const onMain = "git checkout -q main && echo m > m.txt && git add m.txt && git commit -qm 'agent on main' && git checkout -q topic && git rev-parse main";
    const first = await sh("w", onMain);
    expect(first.code).toBe(0);
    const agents = first.stdout.toString().trim();
    expect(git(repo, "rev-parse", "main")).toBe(main);
    expect(refOf(repo, namespace("refs/heads/main"))).toBe(agents);
    expect(logged("git-branch-kept").at(-1)).toMatchObject({ branch: "main", to: agents, reason: expect.stringContaining(`the branch is checked out at ${repo}`) });
    // topic moved by the user while the agent works on it: the agent's commit does not replace theirs.
    const handle = startExec("w", envelope(["/bin/sh", "-c", "read go; echo a > a.txt && git add a.txt && git commit -qm 'agent on topic' && git rev-parse HEAD"], { options: sandboxed(), env: { PATH, ...AGENT_IDENTITY } }));
    await handle.waitEvent("started");
    git(repo, "update-ref", "refs/heads/topic", git(repo, "rev-parse", "feature"));
    handle.write("go\n");
    handle.closeStdin();
    const second = await handle.done;
    expect(second.code).toBe(0);
    expect(git(repo, "rev-parse", "topic")).toBe(git(repo, "rev-parse", "feature"));
    expect(refOf(repo, namespace("refs/heads/topic"))).toBe(second.stdout.toString().trim());
    expect(logged("git-branch-kept").at(-1)).toMatchObject({ branch: "topic", reason: expect.stringContaining("the branch was moved in your repository") });
    // Destroy keeps what reached no branch of the user's (and says so), and removes what did.
    git(repo, "branch", "merged-by-user", agents);
    ok(await op("destroy", "w", { options: sandboxed() }));
    expect(git(repo, "for-each-ref", "--format=%(refname)", "refs/paseo-host-runtime/")).toBe(namespace("refs/heads/topic"));
    expect(logged("git-refs-kept").at(-1)).toMatchObject({ refs: [namespace("refs/heads/topic")] });
  });

  test("a branch the user is rebasing in another worktree (its HEAD detached meanwhile) is not moved either", async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const theirs = join(t.dir, "theirs");
    const feature = git(repo, "rev-parse", "feature");
    // The user's rebase stops after replaying feature's commit (its --exec fails): feature is still where it was, and busy.
    Bun.spawnSync({ cmd: ["git", "rebase", "-q", "--exec", "false", "main"], cwd: theirs, env: { ...process.env, ...GIT_TEST_ENV }, stdout: "ignore", stderr: "ignore" });
    expect(existsSync(join(repo, ".git", "worktrees", "theirs", "rebase-merge", "head-name"))).toBe(true);
    const result = await sh("w", "git checkout -q feature && echo f > f.txt && git add f.txt && git commit -qm 'agent on feature' && git checkout -q topic && git rev-parse feature");
    expect(result.code).toBe(0);
    expect(git(repo, "rev-parse", "feature")).toBe(feature);
    expect(refOf(repo, namespace("refs/heads/feature"))).toBe(result.stdout.toString().trim());
    expect(logged("git-branch-kept").at(-1)).toMatchObject({ branch: "feature", reason: expect.stringContaining(`the branch is being rebased or bisected at ${theirs}`) });
  });

  test("adopted checkout: the agent's commit moves the user's branch; their index follows from the two commits and keeps what they staged", async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo })));
    writeFileSync(join(repo, "staged.txt"), "staged by the user\n");
    git(repo, "add", "staged.txt");
    const before = git(repo, "rev-parse", "main");
    const script = "echo agent > agent.txt && git add agent.txt && git commit -qm 'agent commit' -- agent.txt && git rev-parse HEAD && git diff --cached --name-only";
    const { result, atExit } = await shAtExit("w", script, () => ({ main: refOf(repo, "main") }));
    expect(result.stderr).toBe("");
    const [commit, staged] = result.stdout.toString().trim().split("\n");
    expect(staged).toBe("staged.txt");
    expect(atExit.main).toBe(commit!);
    expect(git(repo, "rev-parse", "main^")).toBe(before);
    expect(git(repo, "status", "--porcelain", "--untracked-files=no")).toBe("A  staged.txt");
    // The user commits in their checkout: the next exec builds on it.
    git(repo, "commit", "-qm", "the user's commit");
    const next = await sh("w", "git log -1 --format=%s && git status --porcelain --untracked-files=no");
    expect(next.stdout.toString()).toBe("the user's commit\n");
  });

  test("the daemon's own git calls (purpose git), in PTY mode too: answered as in the checkout, a commit made there reaches the user's branch before exit", async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const script = "git rev-parse --abbrev-ref HEAD && git status --porcelain && echo t > t.txt && git add t.txt && git commit -qm 'from a terminal' && git rev-parse HEAD";
    const handle = startExec("w", envelope(["/bin/sh", "-c", script], { options: sandboxed(), env: { PATH, ...AGENT_IDENTITY }, purpose: { kind: "git" }, stdio: { kind: "pty", rows: 24, cols: 80 } }), { keepControls: true });
    const atExit = handle.waitEvent("exit").then(() => refOf(repo, "topic"));
    const result = await handle.done.finally(() => {
      handle.closeStdin();
      handle.closeControls();
    });
    const [branch, commit] = result.stdout.toString().replaceAll("\r", "").trim().split("\n");
    expect(branch).toBe("topic");
    expect(await atExit).toBe(commit!);
  });

  const CONCURRENT = process.env.PASEO_STRESS === "1" ? 16 : 4;

  test(`${CONCURRENT} execs at once, each committing on a branch of its own while the user commits on main: every branch and commit arrives`, async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const runs = Array.from({ length: CONCURRENT }, (_, i) =>
      // Plumbing only: each workload touches its own branch, never the shared HEAD and index.
      sh("w", `c=topic; for n in 1 2 3; do c=$(git commit-tree -p $c -m "b${i} $n" "topic^{tree}") || exit 1; done; git update-ref refs/heads/b${i} $c && echo $c`),
    );
    for (let n = 0; n < 3; n++) git(repo, "commit", "-q", "--allow-empty", "-m", `user ${n}`);
    const results = await Promise.all(runs);
    const reached = results.map((result, i) => ({ code: result.code, sameAsInside: refOf(repo, `b${i}`) === result.stdout.toString().trim() }));
    expect(reached).toEqual(results.map(() => ({ code: 0, sameAsInside: true })));
    expect(git(repo, "log", "-1", "--format=%s", "main")).toBe("user 2");
  });

  test("fetch and push to a remote the sandbox shows, as in the checkout", async () => {
    const remote = join(t.dir, "remote.git");
    git(t.dir, "clone", "-q", "--bare", repo, remote);
    git(repo, "remote", "add", "origin", remote);
    const options = sandboxed({ sandboxReadWrite: [remote] });
    ok(await create(options, createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    git(remote, "update-ref", "refs/heads/upstream", git(repo, "rev-parse", "feature"));
    const script = "echo p > p.txt && git add p.txt && git commit -qm pushed && git push -q origin topic && git fetch -q origin && git rev-parse origin/upstream";
    const result = await sh("w", script, options);
    expect(result.stderr).toBe("");
    expect(result.stdout.toString().trim()).toBe(git(repo, "rev-parse", "feature"));
    expect(git(remote, "log", "-1", "--format=%s", "topic")).toBe("pushed");
  });
});

/**
 * An adopted checkout's working tree is the user's and the workload's alike: the user's git
 * follows the `.git` of every submodule entry (gitlink) of their index, wherever the workload
 * could have put one. Both attacks here ran the workload's fsmonitor on the host before the
 * submodule paths were held in place and before the sync refused foreign gitlinks.
 */
describe.skipIf(missing.length > 0)("an adopted checkout's submodule paths stay the user's", () => {
  /** A checkout with a submodule two levels down, checked out (its `.git` a file naming the user's modules/). */
  function withDeepSubmodule(): string {
    const sub = makeRepo(join(t.dir, "deepsource"));
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "deps/lib");
    git(repo, "commit", "-qm", "add deps/lib");
    return join(repo, "deps", "lib");
  }

  test("the directories on the way to a submodule cannot be renamed or replaced, so no .git of the workload's takes the submodule's place", async () => {
    withDeepSubmodule();
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo })));
    const plant = (dir: string) => `{ mkdir -p ${dir} && git init -q ${dir} && git -C ${dir} config core.fsmonitor "touch ${marks}/planted; false"; } 2>/dev/null`;
    const script = [
      `mv deps deps.old 2>/dev/null && echo renamed-deps`,
      `mv deps/lib deps/lib.old 2>/dev/null && echo renamed-lib`,
      `rm -rf deps 2>/dev/null; test -d deps/lib && echo still-there`,
      plant("deps/lib"),
      // The directory on the way is still the workload's to write.
      `echo mine > deps/notes.txt && echo wrote-beside`,
      "true",
    ].join("; ");
    const result = await sh("w", script);
    expect(result.stdout.toString()).toBe("still-there\nwrote-beside\n");
    operatorGit([repo]);
    expect(readdirSync(marks)).toEqual([]);
    expect(readFileSync(join(repo, "deps", "notes.txt"), "utf8")).toBe("mine\n");
  });

  test("a submodule path the user's checkout reaches through a symbolic link: sandboxed execs are refused, nothing launched", async () => {
    withDeepSubmodule();
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo })));
    const elsewhere = join(t.dir, "elsewhere");
    mkdirSync(join(elsewhere, "lib"), { recursive: true });
    rmSync(join(repo, "deps"), { recursive: true, force: true });
    Bun.spawnSync(["ln", "-s", elsewhere, join(repo, "deps")]);
    const result = await sh("w", `touch ${marks}/ran`);
    expect(result.code).toBe(1);
    expect(result.events).toEqual([]);
    expect(result.stderr).toContain(`the submodule path "deps/lib" of ${repo} leads through a symbolic link`);
    expect(readdirSync(marks)).toEqual([]);
  });

  test("a commit adding a submodule entry for a repository of the workload's: no branch of the user's moves to it, nor their index; the commits wait at the workspace's ref", async () => {
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo })));
    const before = { main: git(repo, "rev-parse", "main"), index: git(repo, "ls-files", "--stage") };
    const script = [
      `git init -q evil && git -C evil commit -q --allow-empty -m x && git -C evil config core.fsmonitor "touch ${marks}/gitlink; false"`,
      "git add evil 2>/dev/null && git commit -qm 'add evil'",
      "git checkout -q -b agent-branch && git commit -q --allow-empty -m 'more'",
      "git rev-parse main agent-branch",
    ].join(" && ");
    const result = await sh("w", script);
    expect(result.code).toBe(0);
    const [agentsMain, agentBranch] = result.stdout.toString().trim().split("\n");
    expect({ main: git(repo, "rev-parse", "main"), index: git(repo, "ls-files", "--stage") }).toEqual(before);
    expect(refOf(repo, "agent-branch")).toBeNull();
    expect(refOf(repo, namespace("refs/heads/main"))).toBe(agentsMain!);
    expect(refOf(repo, namespace("refs/heads/agent-branch"))).toBe(agentBranch!);
    const kept = logged("git-branch-kept").map((line) => [line.branch, line.reason]);
    expect(kept).toEqual([
      ["agent-branch", expect.stringContaining(`its commits add a submodule at "evil"`)],
      ["main", expect.stringContaining(`its commits add a submodule at "evil"`)],
    ]);
    operatorGit([repo]);
    hostGit(repo, "status");
    expect(readdirSync(marks)).toEqual([]);
  });

  test("a commit that changes one of the user's own submodule entries still moves their branch", async () => {
    const lib = withDeepSubmodule();
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo })));
    const bumped = git(lib, "commit-tree", "-m", "bumped", `${git(lib, "rev-parse", "HEAD")}^{tree}`);
    const result = await sh("w", `git update-index --cacheinfo 160000,${bumped},deps/lib && git commit -qm bump && git rev-parse HEAD`);
    expect(result.stderr).toBe("");
    expect(git(repo, "rev-parse", "main")).toBe(result.stdout.toString().trim());
    expect(git(repo, "ls-files", "--stage", "deps/lib")).toStartWith(`160000 ${bumped} `);
  });
});
