/** create from each project source: an adopted host directory, a private clone or copy of one, a git URL. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { create, createInput, ok, op } from "../support/operation.ts";
import { ownedEntries, record, records } from "../support/store.ts";
import type { Lab } from "../../kit/scratch.ts";
import { repoLab, git, makeRemote } from "../support/git.ts";

let t: Lab;
let repo: string;
beforeEach(() => ({ t, repo } = repoLab()));
afterEach(() => t.cleanup());

const ENV = { PASEO_SOURCE_CHECKOUT_PATH: ".", PASEO_ROOT_PATH: ".", PASEO_WORKTREE_PATH: "." };

describe("host-directory + existing, adopted (the default)", () => {
  test("the host directory itself is the root; the answer is the canonical state line", async () => {
    const result = await create(t.options, createInput("w1", { kind: "host-directory", path: repo }));
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      `${JSON.stringify({
        type: "state",
        protocolVersion: 1,
        state: { workspaceId: "w1", lifecycle: "ready", lifecycleEnvironment: { ...ENV, PASEO_BRANCH_NAME: "main" } },
        placement: { cwd: repo, hostVisiblePath: repo },
      })}\n`,
    );
    expect(ownedEntries(t.home)).toEqual([]);
  });

  test("relativeCwd selects a directory inside it; a symlinked source path is resolved", async () => {
    symlinkSync(repo, join(t.dir, "link"));
    const json = ok(await create(t.options, createInput("w1", { kind: "host-directory", path: join(t.dir, "link") }, { kind: "existing", relativeCwd: "app/nested" })));
    expect(json.placement).toEqual({ cwd: join(repo, "app/nested"), hostVisiblePath: join(repo, "app/nested") });
  });

  test("a directory that is not a git repository has an empty branch name", async () => {
    const plain = join(t.dir, "plain");
    mkdirSync(plain);
    const json = ok(await create(t.options, createInput("w1", { kind: "host-directory", path: plain })));
    expect(json.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("");
    expect(json.placement.cwd).toBe(plain);
  });

  test("options.lifecycleEnvironment is merged in; exposeHostVisiblePath false drops hostVisiblePath", async () => {
    const options = { ...t.options, lifecycleEnvironment: { EXTRA: "1", PASEO_ROOT_PATH: "custom" }, exposeHostVisiblePath: false };
    const json = ok(await create(options, createInput("w1", { kind: "host-directory", path: repo })));
    expect(json.state.lifecycleEnvironment).toEqual({ ...ENV, PASEO_ROOT_PATH: "custom", PASEO_BRANCH_NAME: "main", EXTRA: "1" });
    expect(json.placement).toEqual({ cwd: repo });
  });

  test("a missing source path fails with a clear message and records nothing", async () => {
    const result = await create(t.options, createInput("w1", { kind: "host-directory", path: join(t.dir, "nope") }));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("input.project.source.path");
    expect(records(t.home)).toEqual([]);
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection).toEqual({ status: "missing" });
  });
});

describe('host-directory + existing with options.hostDirectory "clone"', () => {
  test("a git repository is cloned at its current commit: committed content only, same branch", async () => {
    git(repo, "checkout", "-q", "feature");
    writeFileSync(join(repo, ".env"), "SECRET=1\n");
    writeFileSync(join(repo, "README.md"), "uncommitted edit\n");
    const options = { ...t.options, hostDirectory: "clone" };
    const json = ok(await create(options, createInput("w1", { kind: "host-directory", path: join(repo, "app") })));
    const root: string = json.placement.cwd;
    expect(root.startsWith(join(t.home, "workspaces") + "/")).toBe(true);
    expect(root.endsWith("/app")).toBe(true);
    const checkout = join(root, "..");
    expect(readFileSync(join(checkout, "feature.txt"), "utf8")).toBe("feature\n");
    expect(readFileSync(join(checkout, "README.md"), "utf8")).toBe("hello\n");
    expect(existsSync(join(checkout, ".env"))).toBe(false);
    expect(git(checkout, "rev-parse", "HEAD")).toBe(git(repo, "rev-parse", "HEAD"));
    expect(json.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("feature");
    // The source is untouched and the clone is not a worktree of it.
    expect(readFileSync(join(repo, "README.md"), "utf8")).toBe("uncommitted edit\n");
    expect(git(repo, "worktree", "list").split("\n")).toHaveLength(1);
  });

  test("a plain directory is copied; symlinks are copied as links, never followed", async () => {
    const plain = join(t.dir, "plain");
    const outside = join(t.dir, "outside");
    mkdirSync(join(plain, "sub"), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(outside, "secret.txt"), "outside\n");
    writeFileSync(join(plain, "sub", "a.sh"), "#!/bin/sh\n", { mode: 0o755 });
    symlinkSync(outside, join(plain, "escape"));
    symlinkSync("sub/a.sh", join(plain, "inner"));
    const json = ok(await create({ ...t.options, hostDirectory: "clone" }, createInput("w1", { kind: "host-directory", path: plain }, { kind: "existing", relativeCwd: "sub" })));
    const copy = join(json.placement.cwd, "..");
    expect(json.placement.cwd.startsWith(join(t.home, "workspaces") + "/")).toBe(true);
    expect(readFileSync(join(copy, "sub", "a.sh"), "utf8")).toBe("#!/bin/sh\n");
    expect(statSync(join(copy, "sub", "a.sh")).mode & 0o777).toBe(0o755);
    expect(lstatSync(join(copy, "escape")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(copy, "escape"))).toBe(outside);
    expect(readlinkSync(join(copy, "inner"))).toBe("sub/a.sh");
    expect(json.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("");
    expect(record(t.home, "w1")?.kind).toBe("copy");
  });
});

describe("git URL source", () => {
  let url: string;
  beforeEach(() => {
    url = makeRemote(repo, join(t.dir, "remote.git"));
  });

  test('revision "" clones the remote default branch', async () => {
    const json = ok(await create(t.options, createInput("w1", { kind: "git", url, revision: "" })));
    const root: string = json.placement.cwd;
    expect(root.startsWith(join(t.home, "workspaces") + "/")).toBe(true);
    expect(readFileSync(join(root, "README.md"), "utf8")).toBe("hello\n");
    expect(existsSync(join(root, "feature.txt"))).toBe(false);
    expect(json.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("main");
  });

  test("a revision (branch, tag or commit) is checked out detached", async () => {
    for (const [id, revision] of [
      ["by-branch", "feature"],
      ["by-tag", "v1"],
      ["by-sha", git(repo, "rev-parse", "feature")],
    ] as const) {
      const json = ok(await create(t.options, createInput(id, { kind: "git", url, revision })));
      const root: string = json.placement.cwd;
      expect(json.state.lifecycleEnvironment.PASEO_BRANCH_NAME).toBe("");
      expect(git(root, "rev-parse", "HEAD")).toBe(git(repo, "rev-parse", revision === "v1" ? "v1^{commit}" : revision));
      expect(JSON.stringify(json)).not.toContain(git(repo, "rev-parse", "feature"));
    }
  });

  test("subdirectory and relativeCwd select the root inside the clone", async () => {
    const json = ok(await create(t.options, createInput("w1", { kind: "git", url, revision: "", subdirectory: "app" }, { kind: "existing", relativeCwd: "nested" })));
    expect(json.placement.cwd.endsWith("/app/nested")).toBe(true);
    expect(readFileSync(join(json.placement.cwd, "deep.txt"), "utf8")).toBe("deep\n");
  });

  test("a clone that fails quotes git's stderr and leaves nothing behind", async () => {
    const result = await create(t.options, createInput("w1", { kind: "git", url: `file://${t.dir}/no-such-remote.git`, revision: "" }));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("git clone");
    expect(result.stderr).toContain("does not appear to be a git repository");
    expect(ownedEntries(t.home)).toEqual([]);
    expect(records(t.home)).toEqual([]);
  });

  test("an unknown revision fails naming it and leaves nothing behind", async () => {
    const result = await create(t.options, createInput("w1", { kind: "git", url, revision: "no-such-rev" }));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('revision "no-such-rev" does not name a commit');
    expect(ownedEntries(t.home)).toEqual([]);
    expect(records(t.home)).toEqual([]);
  });
});

describe("seedPaseoConfigFrom and markFirstAgentBranchAutoName", () => {
  test("paseo.json is copied into the root when absent there, never over an existing one", async () => {
    const seed = join(t.dir, "seed");
    mkdirSync(seed);
    writeFileSync(join(seed, "paseo.json"), '{"seeded":true}\n');
    const url = makeRemote(repo, join(t.dir, "remote.git"));
    const json = ok(await create(t.options, createInput("w1", { kind: "git", url, revision: "" }, { kind: "existing" }, { seedPaseoConfigFrom: seed, markFirstAgentBranchAutoName: true })));
    expect(readFileSync(join(json.placement.cwd, "paseo.json"), "utf8")).toBe('{"seeded":true}\n');
    expect(record(t.home, "w1")?.details.markFirstAgentBranchAutoName).toBe(true);
    expect(JSON.stringify(json)).not.toContain("markFirstAgentBranchAutoName");

    writeFileSync(join(repo, "paseo.json"), '{"own":true}\n');
    ok(await create(t.options, createInput("w2", { kind: "host-directory", path: repo }, { kind: "existing" }, { seedPaseoConfigFrom: seed })));
    expect(readFileSync(join(repo, "paseo.json"), "utf8")).toBe('{"own":true}\n');
  });
});

describe("bad input changes nothing", () => {
  for (const [name, body, message] of [
    ["a wrong protocolVersion", { protocolVersion: 2 }, "unsupported protocolVersion (a number other than 1)"],
    ["no input", { input: undefined }, "create needs `input`"],
    ["a mismatched workspace id", { input: createInput("other", { kind: "host-directory", path: "/tmp" }) }, "does not match --workspace-id"],
    ["a relative source path", { input: createInput("w1", { kind: "host-directory", path: "rel/path" }) }, "must be an absolute path"],
    ["an unknown key", { input: { ...createInput("w1", { kind: "host-directory", path: "/tmp" }), root: "/x" } }, 'unknown key "root"'],
    ["a bad hostDirectory option", { options: { hostDirectory: "move" } }, "options.hostDirectory"],
    ["a non-string owner", { options: { owner: 7 } }, "options.owner"],
  ] as const) {
    test(`${name}: exit 1, clear stderr, no runtime home created`, async () => {
      const body2 = { input: createInput("w1", { kind: "host-directory", path: repo }), ...body } as Record<string, unknown>;
      body2.options = { ...t.options, ...((body as { options?: object }).options ?? {}) };
      const result = await op("create", "w1", body2);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(message);
      expect(existsSync(t.home)).toBe(false);
    });
  }
});
