/**
 * Paths a sandbox holds in place (issue 22), against the compiled binary: paths a sandboxed workload can
 * move, make or re-point (a submodule's `.git` of a repository enclosing an adopted directory,
 * a create's source and its git dirs, the directories above the runtime's home and the user's
 * repository, a view path inside the workspace), each read afterwards by a git or a bind
 * outside the sandbox. Each test failed before the fix its commit names.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { missingTools } from "../support/tools.ts";
import { create, createInput, destroyed, later, ok, op } from "../support/operation.ts";
import { until } from "../support/poll.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { AGENT_IDENTITY, hostGit, sandboxGitKit } from "../support/sandbox-git.ts";
import { git, makeRepo } from "../support/git.ts";
import { bwrapArguments } from "../../src/sandbox/bwrap.ts";

const missing = missingTools("sandbox-held-paths.test.ts", ["bwrap", "git"]);
/** Creates raced against a flipping link (more with PASEO_STRESS=1). */
const RACES = process.env.PASEO_STRESS === "1" ? 40 : 6;

let t: Lab;
const { sandboxed, sh } = sandboxGitKit(() => t);
let marks: string;

beforeEach(() => {
  t = lab("phr-sbx-r3-");
  marks = join(t.dir, "marks");
  mkdirSync(marks);
});
afterEach(async () => {
  try {
    for (const id of ["w", "w2", ...Array.from({ length: RACES }, (_, i) => `v${i}`)]) await destroyed(id, sandboxed());
  } finally {
    t.cleanup();
  }
});

function fsmonitorRepo(dir: string, mark: string): string {
  return `git init -q ${dir} && git config --file ${dir}/.git/config core.fsmonitor "touch ${marks}/${mark} 2>/dev/null; false"`;
}

/** A repository with a submodule at `deps/lib`, not checked out. */
function repoWithSubmodule(): string {
  const sub = makeRepo(join(t.dir, "subsource"));
  const repo = makeRepo(join(t.dir, "repo"));
  git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "deps/lib");
  git(repo, "commit", "-qm", "add sub");
  git(repo, "submodule", "deinit", "-q", "-f", "deps/lib");
  return repo;
}

describe.skipIf(missing.length > 0)("the user's submodules are held wherever the workload writes", () => {
  test("an adopted directory below a repository's top: the repository's submodule inside it is held, its .git not the workload's to make", async () => {
    const repo = repoWithSubmodule();
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: join(repo, "deps") })));
    const result = await sh("w", `{ rm -rf lib || mv lib lib.old; mkdir -p lib; ${fsmonitorRepo("lib", "submodule")}; } 2>/dev/null; touch mine && echo done`);
    expect(result.stdout.toString()).toBe("done\n");
    hostGit(repo, "status");
    expect(readdirSync(marks)).toEqual([]);
    expect(existsSync(join(repo, "deps", "mine"))).toBe(true);
  });

  test("an adopted directory that is a repository's submodule not checked out: sandboxed execs are refused, nothing launched", async () => {
    const repo = repoWithSubmodule();
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: join(repo, "deps", "lib") })));
    const result = await sh("w", `${fsmonitorRepo(".", "submodule")}; echo launched`);
    expect(result.code).toBe(1);
    expect(result.stdout.toString()).toBe("");
    expect(result.stderr.toString()).toContain(`is the submodule "deps/lib" of ${repo}`);
    hostGit(repo, "status");
    expect(readdirSync(marks)).toEqual([]);
  });

  test("an adopted checkout whose private git dir the workload made unreadable: a submodule the user adds later is still held", async () => {
    const repo = repoWithSubmodule();
    // The runtime's jailed reads of P give up after a second instead of 30.
    const options = sandboxed({ gitTimeoutMs: 1000 });
    ok(await create(options, createInput("w", { kind: "host-directory", path: repo })));
    // P's HEAD a FIFO: every jailed read of P now ends in its time bound, and the sync into P with it.
    expect((await sh("w", "rm .git/HEAD && mkfifo .git/HEAD && echo broken", options)).stdout.toString()).toBe("broken\n");
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", join(t.dir, "subsource"), "deps/new");
    // Launched with the pins of that sync; P's HEAD made a file again first, so that git works inside.
    const result = await sh("w", `{ rm .git/HEAD && echo 'ref: refs/heads/main' > .git/HEAD; rm -rf deps/new/.git; ${fsmonitorRepo("deps/new", "new-submodule")}; } 2>/dev/null; echo done`, options);
    expect(result.stdout.toString()).toBe("done\n");
    hostGit(repo, "status");
    expect(readdirSync(marks)).toEqual([]);
  });
});

describe.skipIf(missing.length > 0)("a directory or git dir a sandboxed workload writes is no create's source", () => {
  test("a create from a repository whose git dir a sandboxed workload writes (sandboxReadWrite) is refused, naming that workspace", async () => {
    const other = makeRepo(join(t.dir, "other"));
    const plain = join(t.dir, "plain");
    mkdirSync(plain);
    const options = sandboxed({ sandboxReadWrite: [join(other, ".git")] });
    ok(await create(options, createInput("w", { kind: "host-directory", path: plain })));
    const hook = `printf '#!/bin/sh\\ntouch ${marks}/post-checkout\\n' > ${other}/.git/hooks/post-checkout && chmod +x ${other}/.git/hooks/post-checkout`;
    const planted = await sh("w", `${hook} && echo planted`, options);
    expect(planted.stdout.toString()).toBe("planted\n");
    const second = await create(sandboxed(), createInput("w2", { kind: "host-directory", path: other }, { kind: "branch", branchName: "topic", baseRef: "main" }));
    expect(readdirSync(marks)).toEqual([]);
    expect(second.code).toBe(1);
    expect(second.stderr.toString()).toContain(`the sandboxed workload of workspace "w" writes`);
  });

  test("a create's source through a symbolic link the workload flips: the directory checked is the one materialized", async () => {
    const good = makeRepo(join(t.dir, "good"));
    const area = join(t.dir, "area");
    mkdirSync(area);
    symlinkSync(good, join(area, "link"));
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: area })));
    const hook = `printf '#!/bin/sh\\ntouch ${marks}/post-checkout\\n' > bad/.git/hooks/post-checkout && chmod +x bad/.git/hooks/post-checkout`;
    // The link points at the user's repository, then at one of the workload's, and back, until told to stop.
    const flip = `while [ ! -e stop ]; do ln -sfn ${area}/bad l2 && mv -T l2 link; ln -sfn ${good} l2 && mv -T l2 link; done`;
    const handle = startExec("w", envelope(["/bin/sh", "-c", `git init -q bad && git -C bad commit -q --allow-empty -m x && ${hook} && touch started && ${flip}`], { options: sandboxed(), env: { PATH, ...AGENT_IDENTITY } }));
    handle.closeStdin();
    await until("the workload to start flipping the link", () => existsSync(join(area, "started")));
    for (let i = 0; i < RACES && readdirSync(marks).length === 0; i++) {
      await create(t.options, createInput(`v${i}`, { kind: "host-directory", path: join(area, "link") }, { kind: "branch", branchName: `b${i}`, baseRef: "HEAD" }));
    }
    writeFileSync(join(area, "stop"), "");
    await handle.done;
    expect(readdirSync(marks)).toEqual([]);
  }, 120_000);

  test("a later-dialect create (source kind \"directory\") from inside a sandboxed adopted directory is refused as a seed one is", async () => {
    const repo = makeRepo(join(t.dir, "repo"));
    const pkg = join(repo, "pkg");
    mkdirSync(pkg);
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: pkg })));
    const hooks = `git init -q . && git commit -q --allow-empty -m x && printf '#!/bin/sh\\ntouch ${marks}/post-checkout\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout`;
    expect((await sh("w", `${hooks} && echo planted`)).stdout.toString()).toBe("planted\n");
    const refused = await op("create", "w2", later({ input: createInput("w2", { kind: "directory", path: pkg }, { kind: "branch", branchName: "b2", baseRef: "HEAD" }), options: t.options }));
    expect(readdirSync(marks)).toEqual([]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.toString()).toContain(`which the sandboxed workload of workspace "w" writes`);
  });
});

describe.skipIf(missing.length > 0)("what the view binds stays where it was shown", () => {
  test("an adopted directory holding the runtime's home: the workload cannot move the home away on the host", async () => {
    const area = join(t.dir, "area");
    mkdirSync(area);
    const options = { ...sandboxed(), stateDirectory: join(area, "state", "home") };
    ok(await create(options, createInput("w", { kind: "host-directory", path: area })));
    const before = readdirSync(join(area, "state", "home")).sort();
    const result = await sh("w", "mv state state.old 2>/dev/null; mkdir -p state/home && echo forged > state/home/x; echo done", options);
    expect(result.stdout.toString()).toBe("done\n");
    expect(readdirSync(join(area, "state", "home")).sort()).toEqual(before);
    // Its home is not the lab's: the afterEach would not find it there.
    await destroyed("w", options);
  });

  test("sandboxReadWrite above the repository: the workload cannot move the user's repository away and put a git dir of its own at its path", async () => {
    const area = join(t.dir, "area");
    const repo = makeRepo(join(area, "x", "repo"));
    const options = sandboxed({ sandboxReadWrite: [area] });
    ok(await create(options, createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const hook = `printf '#!/bin/sh\\ntouch ${marks}/reference-transaction\\n' > ${area}/x/repo/.git/hooks/reference-transaction && chmod +x ${area}/x/repo/.git/hooks/reference-transaction`;
    const script = `{ mv ${area}/x ${area}/moved && mkdir -p ${area}/x/repo && cp -a ${area}/moved/repo/.git ${area}/x/repo/.git && ${hook}; } 2>/dev/null; git commit -q --allow-empty -m agent && echo done`;
    const result = await sh("w", script, options);
    expect(result.stdout.toString()).toBe("done\n");
    expect(readdirSync(marks)).toEqual([]);
    expect(existsSync(join(area, "moved"))).toBe(false);
    // The commit still reached the user's repository.
    expect(git(repo, "log", "-1", "--format=%s", "topic")).toBe("agent");
  });

  test("anchors: every directory from a writable view path down to a mount inside it, none below a mask (which would show the hidden home's contents)", () => {
    const area = join(t.dir, "area");
    const home = join(area, "state", "home");
    const checkout = join(home, "workspaces", "k", "checkout");
    mkdirSync(checkout, { recursive: true });
    const args = bwrapArguments({ root: checkout, readWrite: [area], readOnly: [], network: "host", hidden: [home] });
    const anchor = (dir: string) => args.findIndex((arg, i) => arg === "--bind" && args[i + 1] === dir && args[i + 2] === dir);
    expect(anchor(join(area, "state"))).toBeGreaterThan(anchor(area));
    expect(anchor(join(area, "state"))).toBeLessThan(args.indexOf(home));
    // The checkout lies below the mask: nothing of the host's home is bound on the way to it.
    for (const dir of [join(home, "workspaces"), join(home, "workspaces", "k")]) expect(anchor(dir)).toBe(-1);
  });

  test("a sandboxReadWrite directory inside the workspace that the workload replaces with a symbolic link: the next exec is refused, the path it points at is not written", async () => {
    const shown = join(t.dir, "shown");
    mkdirSync(shown);
    const dir = join(t.dir, "plain");
    mkdirSync(join(dir, "sub"), { recursive: true });
    const options = sandboxed({ sandboxReadWrite: [join(dir, "sub")], sandboxReadOnly: [shown] });
    ok(await create(options, createInput("w", { kind: "host-directory", path: dir })));
    // An exec asking for less (no sandboxReadWrite) is accepted; there sub is no mount point, and becomes a link.
    const less = sandboxed({ sandboxReadOnly: [shown] });
    expect((await sh("w", "rmdir sub && ln -s ../shown sub && echo pointed", less)).stdout.toString()).toBe("pointed\n");
    const result = await sh("w", "echo written > sub/file; echo done", options);
    expect(existsSync(join(shown, "file"))).toBe(false);
    expect(result.code).toBe(1);
    expect(result.stderr.toString()).toContain(`${join(dir, "sub")} lies in what the workload writes and is a symbolic link`);
  });
});
