/**
 * The edges of the sandbox's git (issue 22), against the compiled binary: a `.git` the workload
 * makes in an adopted directory, view paths through symbolic links, the runtime's home, what
 * the sync reads of the workspace's git dir (ref values only, never waiting on a FIFO, never
 * losing a kept ref), a create's source a workload writes. Every test is an attack; each that
 * once succeeded failed before the fix its commit names.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { missingTools } from "../support/tools.ts";
import { create, createInput, destroyed, ok, op } from "../support/operation.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { hostGit, sandboxGitKit, workspaceRef } from "../support/sandbox-git.ts";
import { record, withStore, storePath } from "../support/store.ts";
import { bwrapArguments } from "../../src/sandbox/bwrap.ts";
import { sandboxProfile } from "../../src/sandbox/seatbelt.ts";
import { git, makeRepo } from "../support/git.ts";

const missing = missingTools("sandbox-git-edges.test.ts", ["bwrap", "git"]);

let t: Lab;
const { sandboxed, sh, logged, givenUp } = sandboxGitKit(() => t);
/** Where a command planted by the workload leaves a mark when something on the host runs it. */
let marks: string;

beforeEach(() => {
  t = lab("phr-sbx-red-");
  marks = join(t.dir, "marks");
  mkdirSync(marks);
});
afterEach(async () => {
  try {
    await destroyed("w", sandboxed());
  } finally {
    t.cleanup();
  }
});

/** A git dir's hooks and config that leave a mark when any git on the host uses them. */
function plantHooks(gitDir: string): string {
  const hooks = ["reference-transaction", "post-checkout", "post-index-change", "pre-auto-gc"];
  return [
    `git config --file ${gitDir}/config core.fsmonitor "touch ${marks}/fsmonitor 2>/dev/null; false"`,
    `mkdir -p ${gitDir}/hooks`,
    ...hooks.map((hook) => `printf '#!/bin/sh\\ntouch ${marks}/${hook} 2>/dev/null; exit 0\\n' > ${gitDir}/hooks/${hook} && chmod +x ${gitDir}/hooks/${hook}`),
  ].join(" && ");
}

describe.skipIf(missing.length > 0)("a .git the workload makes is never taken for the user's", () => {
  test.each([false, true])("an adopted directory that is not a repository (a record of before the runtime kept its git dirs: %p): a .git the workload makes there is not the runtime's to sync with", async (legacy) => {
    const dir = join(t.dir, "plain");
    mkdirSync(dir);
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: dir })));
    if (legacy) {
      // As a record of before the runtime kept an adopted directory's git dirs: none said.
      const { git: _, ...details } = record(t.home, "w")!.details;
      withStore(t.home, (db) => db.run("UPDATE workspaces SET details_json = ? WHERE workspace_id = 'w'", [JSON.stringify(details)]));
      expect((await sh("w", "true")).code).toBe(0);
    }
    const first = await sh("w", `git init -q . && ${plantHooks(".git")} && echo planted`);
    expect(first.stdout.toString()).toBe("planted\n");
    // The next exec commits in what the workload now sees as its repository.
    const second = await sh("w", "git commit -q --allow-empty -m x && echo committed");
    expect(second.stdout.toString()).toBe("committed\n");
    ok(await op("destroy", "w", { options: sandboxed() }));
    expect(readdirSync(marks)).toEqual([]);
  });
});

describe.skipIf(missing.length > 0)("sandboxReadWrite never makes the user's git dirs writable", () => {
  const cases = [
    ["adopted", "a symbolic link to a directory above the repository"],
    ["worktree", "a symbolic link to a directory above the repository"],
    ["worktree", "the repository's hooks directory itself"],
  ] as const;
  test.each(cases)("%s placement, sandboxReadWrite naming %s: the user's git dirs stay read-only", async (placement, how) => {
    const area = join(t.dir, "area");
    mkdirSync(area);
    const repo = makeRepo(join(area, "repo"));
    const alias = join(t.dir, "alias");
    symlinkSync(area, alias);
    const gitDir = how.startsWith("a symbolic") ? `${alias}/repo/.git` : join(repo, ".git");
    const options = sandboxed({ sandboxReadWrite: [how.startsWith("a symbolic") ? alias : join(repo, ".git", "hooks")] });
    ok(await create(options, createInput("w", { kind: "host-directory", path: repo }, placement === "adopted" ? { kind: "existing" } : { kind: "branch", branchName: "topic", baseRef: "main" })));
    const before = git(repo, "config", "--list", "--local");
    const result = await sh("w", `{ git config --file ${gitDir}/config core.fsmonitor "touch ${marks}/fsmonitor 2>/dev/null; false"; ${plantHooks(`${gitDir}`)}; } 2>/dev/null; echo done`, options);
    expect(result.stdout.toString()).toBe("done\n");
    hostGit(repo, "status");
    hostGit(repo, "commit", "-q", "--allow-empty", "-m", "the operator's");
    expect(readdirSync(marks)).toEqual([]);
    expect(git(repo, "config", "--list", "--local")).toBe(before);
  });
});

describe.skipIf(missing.length > 0)("what the sync reads of P is ref values only", () => {
  test("symbolic refs, a ref file pointing outside refs/, dangerous packed-refs lines in P: the user's config, HEAD and refs stay as they are", async () => {
    const repo = makeRepo(join(t.dir, "repo"));
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const config = readFileSync(join(repo, ".git", "config"), "utf8");
    const head = readFileSync(join(repo, ".git", "HEAD"), "utf8");
    const main = git(repo, "rev-parse", "main");
    const refsBefore = git(repo, "for-each-ref", "--format=%(refname) %(objectname)");
    const script = [
      "g=$(git rev-parse --git-dir)",
      "git commit -q --allow-empty -m agent",
      // A branch that is a symbolic ref to the user's main, one whose file points outside refs/, odd packed-refs lines.
      "git symbolic-ref refs/heads/alias refs/heads/main",
      "printf 'ref: ../../config\\n' > $g/refs/heads/escape",
      "git symbolic-ref HEAD refs/heads/alias",
      `printf '%s refs/heads/with space\\n%s refs/heads/../../HEAD\\n' $(git rev-parse HEAD) $(git rev-parse HEAD) >> $g/packed-refs`,
      "echo ok",
    ].join(" && ");
    const result = await sh("w", script);
    expect(result.stderr).toBe("");
    expect(result.stdout.toString()).toBe("ok\n");
    expect(readFileSync(join(repo, ".git", "config"), "utf8")).toBe(config);
    expect(readFileSync(join(repo, ".git", "HEAD"), "utf8")).toBe(head);
    // A P git cannot read (the dangerous packed ref) is not synced at all: nothing of it reaches the user's refs.
    expect(git(repo, "rev-parse", "main")).toBe(main);
    expect(git(repo, "for-each-ref", "--format=%(refname) %(objectname)")).toBe(refsBefore);
    await givenUp("w");
  });
});

describe.skipIf(missing.length > 0)("a P git cannot list loses nothing already brought out", () => {
  test("commits kept at the workspace's ref stay there when the workload then garbles P's packed-refs", async () => {
    const repo = makeRepo(join(t.dir, "repo"));
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    // main is checked out in the user's checkout: the agent's commit on it waits at the workspace's ref.
    const kept = await sh("w", "git checkout -q main && git commit -q --allow-empty -m 'agent on main' && git checkout -q topic && git rev-parse main");
    expect(kept.code).toBe(0);
    const keptRef = workspaceRef("w", "refs/heads/main");
    expect(git(repo, "rev-parse", keptRef)).toBe(kept.stdout.toString().trim());
    const garbled = await sh("w", `printf 'not a packed ref\n' >> "$(git rev-parse --git-dir)/packed-refs" && echo garbled`);
    expect(garbled.stdout.toString()).toBe("garbled\n");
    expect(git(repo, "rev-parse", keptRef)).toBe(kept.stdout.toString().trim());
    await givenUp("w");
  });
});

describe.skipIf(missing.length > 0)("the sync never waits on the workload", () => {
  test("a commit whose object file the workload made a FIFO: the exit comes at once (not after options.gitTimeoutMs), nothing is brought in, and the log says why", async () => {
    const repo = makeRepo(join(t.dir, "repo"));
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const topic = git(repo, "rev-parse", "topic");
    // for-each-ref without %(objecttype) only looks at whether the object exists; upload-pack opens it.
    const script = "git commit -q --allow-empty -m x && o=$(git rev-parse HEAD) && f=$(git rev-parse --git-dir)/objects/$(echo $o | cut -c1-2)/$(echo $o | cut -c3-) && rm -f $f && mkfifo $f && echo fifo";
    const result = await sh("w", script);
    expect(result.stdout.toString()).toBe("fifo\n");
    expect(git(repo, "rev-parse", "topic")).toBe(topic);
    expect(git(repo, "for-each-ref", "refs/paseo-host-runtime/")).toBe("");
    expect(logged("git-error").at(-1)?.message).toContain("which is not a file or directory: not read");
    await givenUp("w");
  }, 60_000);
});

describe.skipIf(missing.length > 0)("the runtime's home is never the workload's", () => {
  test.each(["adopted", "worktree"])("%s placement, sandboxReadWrite containing the runtime's home: its store and the workspace's storage are not shown; the workspace still works", async (placement) => {
    const repo = makeRepo(join(t.dir, "repo"));
    const options = sandboxed({ sandboxReadWrite: [t.dir] });
    ok(await create(options, createInput("w", { kind: "host-directory", path: repo }, placement === "adopted" ? { kind: "existing" } : { kind: "branch", branchName: "topic", baseRef: "main" })));
    // The record's git dirs and isolation are what the runtime trusts: a workload that could write them would choose them.
    const script = `ls -A ${t.home}; { printf x >> ${t.home}/state.sqlite; } 2>/dev/null; git commit -q --allow-empty -m agent && git rev-parse HEAD`;
    const result = await sh("w", script, options);
    expect(result.stderr).toBe("");
    const lines = result.stdout.toString().trim().split("\n");
    // Only the path down to the workspace's own checkout, if it lies in the home, is left in view.
    expect(lines.slice(0, -1)).toEqual(placement === "adopted" ? [] : ["workspaces"]);
    // A store file is whole pages: the byte the workload tried to append is not there.
    expect(statSync(storePath(t.home)).size % 512).toBe(0);
    expect(git(repo, "rev-parse", placement === "adopted" ? "main" : "topic")).toBe(lines.at(-1)!);
    // And the isolation it keeps still holds.
    const none = await sh("w", "true", { ...t.options, isolation: "none" });
    expect(none.code).toBe(1);
  });
});

test("a hidden directory: bwrap masks it below the path that contains it before binding the root inside it; the macOS profile (unverified there) denies it but the root", () => {
  const area = join(t.dir, "area");
  const home = join(area, "home");
  const root = join(home, "workspaces", "k", "checkout");
  mkdirSync(root, { recursive: true });
  const view = { root, readWrite: [area], readOnly: [], network: "host" as const, hidden: [home] };
  const args = bwrapArguments(view);
  const [bound, masked, rooted] = [args.indexOf(area), args.indexOf(home), args.indexOf(root)];
  expect(args[masked - 1]).toBe("--tmpfs");
  expect(bound < masked && masked < rooted).toBe(true);
  const profile = sandboxProfile(view, { program: "/usr/bin/true", argv: ["true"], env: {} });
  expect(profile.indexOf(`(deny file-read* file-write* (subpath "${home}"))`)).toBeLessThan(profile.indexOf(`(allow file-read* file-write* (subpath "${root}"))`));
});

describe.skipIf(missing.length > 0)("the user's shallow file is the user's", () => {
  test("a shallow file the workload writes in its git dir: the fetch brings its commits, and the user's repository stays complete", async () => {
    const repo = makeRepo(join(t.dir, "repo"));
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const script = "git commit -q --allow-empty -m agent && git rev-parse HEAD~1 > $(git rev-parse --git-dir)/shallow && git rev-parse HEAD";
    const result = await sh("w", script);
    expect(result.stderr).toBe("");
    expect(existsSync(join(repo, ".git", "shallow"))).toBe(false);
    expect(git(repo, "rev-parse", "topic")).toBe(result.stdout.toString().trim());
    expect(git(repo, "fsck", "--no-progress", "--connectivity-only")).toBe("");
  });
});

describe.skipIf(missing.length > 0)("an option path the workload can replace", () => {
  test.each(["sandboxReadOnly", "sandboxReadWrite"])("%s naming a directory deep inside the workspace: a symbolic link the workload puts in its place (its parent renamed) shows nothing of the host at the next exec", async (option) => {
    const secret = join(t.dir, "secret");
    mkdirSync(secret);
    writeFileSync(join(secret, "key"), "the operator's key\n");
    const dir = join(t.dir, "plain");
    mkdirSync(join(dir, "deps", "vendor"), { recursive: true });
    const options = sandboxed({ [option]: [join(dir, "deps", "vendor")] });
    ok(await create(options, createInput("w", { kind: "host-directory", path: dir })));
    const first = await sh("w", `cat ${secret}/key 2>/dev/null; mv deps deps.old 2>/dev/null; mkdir -p deps; ln -s ${secret} deps/vendor 2>/dev/null; echo planted`, options);
    expect(first.stdout.toString()).toBe("planted\n");
    const second = await sh("w", `cat deps/vendor/key 2>/dev/null; echo overwritten > deps/vendor/key 2>/dev/null; echo done`, options);
    // bwrap follows the link for the source and again for the destination, which then does not exist: refused.
    expect(second.stdout.toString()).not.toContain("the operator's key");
    expect(readFileSync(join(secret, "key"), "utf8")).toBe("the operator's key\n");
  });
});

describe.skipIf(missing.length > 0)("a directory a sandboxed workload writes is no create's source", () => {
  test("a later create from inside a sandboxed adopted directory, where the workload made a repository with hooks: refused, no git of the runtime runs there, nothing recorded", async () => {
    const repo = makeRepo(join(t.dir, "repo"));
    const pkg = join(repo, "pkg");
    mkdirSync(pkg);
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: pkg })));
    const planted = await sh("w", `git init -q . && git commit -q --allow-empty -m x && ${plantHooks(".git")} && echo planted`);
    expect(planted.stdout.toString()).toBe("planted\n");
    const refused = await create(t.options, createInput("w2", { kind: "host-directory", path: pkg }, { kind: "branch", branchName: "b2", baseRef: "HEAD" }));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`is inside ${pkg}, which the sandboxed workload of workspace "w" writes`);
    expect((await op("inspect", "w2", { options: t.options })).stdout).toContain('"missing"');
    expect(readdirSync(marks)).toEqual([]);
    // Its repository itself (whose .git no workload there can write) is still a source; so is a repeat of w's own create.
    ok(await create(t.options, createInput("w3", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "b3", baseRef: "main" })));
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: pkg })));
    ok(await op("destroy", "w3", { options: t.options }));
    expect(readdirSync(marks)).toEqual([]);
  });

  test("with another sandboxed workspace listed first, no git of the runtime reads the workload's repository before the refusal (its config a FIFO would hold the create)", async () => {
    const other = join(t.dir, "other");
    mkdirSync(other);
    ok(await create(sandboxed(), createInput("first", { kind: "host-directory", path: other })));
    const repo = makeRepo(join(t.dir, "repo"));
    const pkg = join(repo, "pkg");
    mkdirSync(pkg);
    ok(await create(sandboxed(), createInput("w", { kind: "host-directory", path: pkg })));
    const planted = await sh("w", "git init -q . && rm .git/config && mkfifo .git/config && echo planted");
    expect(planted.stdout.toString()).toBe("planted\n");
    const refused = await create({ ...t.options, gitTimeoutMs: 5000 }, createInput("w2", { kind: "host-directory", path: pkg }, { kind: "branch", branchName: "b2", baseRef: "HEAD" }));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`is inside ${pkg}, which the sandboxed workload of workspace "w" writes`);
    ok(await op("destroy", "first", { options: sandboxed() }));
  });
});
