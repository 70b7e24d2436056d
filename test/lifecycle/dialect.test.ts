/**
 * The later upstream dialect (SPEC-later-dialect.md) against the compiled binary, driven like its
 * daemon: runtimeInstanceId in every request, `directory` sources, materializedFreshContent on
 * create, placement `{cwd}` only. A workspace keeps the dialect it was created in.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary } from "../../kit/binary.ts";
import { INSTANCE_ID, instanceIdOf } from "../../kit/envelope.ts";
import { createInput, later, ok, op, response } from "../support/operation.ts";
import { ownedEntries, record, records } from "../support/store.ts";
import type { Lab } from "../../kit/scratch.ts";
import { repoLab, makeRemote, worktrees } from "../support/git.ts";

let t: Lab;
let repo: string;
beforeEach(() => ({ t, repo } = repoLab("phr-dialect-")));
afterEach(() => t.cleanup());

const directory = (path = repo) => ({ kind: "directory", path });
const laterCreate = (input: { workspaceId: string }, options: Record<string, unknown> = t.options, instanceId = INSTANCE_ID) => op("create", input.workspaceId, later({ input, options }, instanceId));
const laterOp = (name: "inspect" | "pause" | "resume" | "destroy", id: string, options = t.options, instanceId = INSTANCE_ID) => op(name, id, later({ options }, instanceId));
const laterReconcile = (workspaceIds: string[], options = t.options, instanceId = INSTANCE_ID) => op("reconcile", null, later({ options, workspaceIds }, instanceId));

describe("the later daemon's lifecycle", () => {
  test("create, inspect, pause, resume, destroy: canonical later-dialect bytes, no hostVisiblePath", async () => {
    const input = createInput("w1", directory());
    const created = response(await laterCreate(input), "later");
    expect(created).toEqual({
      type: "state",
      protocolVersion: 1,
      state: { workspaceId: "w1", lifecycle: "ready", lifecycleEnvironment: { PASEO_SOURCE_CHECKOUT_PATH: ".", PASEO_ROOT_PATH: ".", PASEO_WORKTREE_PATH: ".", PASEO_BRANCH_NAME: "main" } },
      placement: { cwd: repo },
      materializedFreshContent: false,
    });
    expect(record(t.home, "w1")).toMatchObject({ dialect: "later", instanceId: INSTANCE_ID });

    expect(response(await laterOp("inspect", "w1"), "later").inspection).toEqual({ status: "ready", state: created.state, placement: { cwd: repo } });
    expect((await laterOp("pause", "w1")).stdout).toBe('{"type":"ok","protocolVersion":1}\n');
    expect(response(await laterOp("inspect", "w1"), "later").inspection.status).toBe("paused");
    const resumed = response(await laterOp("resume", "w1"), "later");
    expect(resumed).toEqual({ type: "state", protocolVersion: 1, state: created.state, placement: { cwd: repo } });
    expect(resumed).not.toHaveProperty("materializedFreshContent");
    expect((await laterOp("destroy", "w1")).stdout).toBe('{"type":"ok","protocolVersion":1}\n');
    expect(response(await laterOp("inspect", "w1"), "later").inspection).toEqual({ status: "missing" });
    expect(readdirSync(repo)).toContain("README.md");
  });

  test("materializedFreshContent is true exactly when this create made fresh content", async () => {
    const plain = join(t.dir, "plain");
    mkdirSync(plain);
    writeFileSync(join(plain, "file.txt"), "x");
    const remote = makeRemote(repo, join(t.dir, "remote.git"));
    const clone = { ...t.options, hostDirectory: "clone" };
    const cases: [string, { workspaceId: string }, Record<string, unknown>, boolean][] = [
      ["a directory adopted in place", createInput("adopt", directory()), t.options, false],
      ["a private clone of a directory's repository", createInput("clone", directory()), clone, true],
      ["a copy of a plain directory", createInput("copy", directory(plain)), clone, true],
      ["a worktree for a branch placement", createInput("branch", directory(), { kind: "branch", branchName: "topic", baseRef: "main" }), t.options, true],
      ["a worktree for a checkout placement", createInput("checkout", directory(), { kind: "checkout", ref: "feature" }), t.options, true],
      ["a clone of a git URL", createInput("url", { kind: "git", url: remote, revision: "main" }), t.options, true],
    ];
    for (const [what, input, options, fresh] of cases) {
      const first = response(await laterCreate(input, options), "later");
      expect([what, first.materializedFreshContent]).toEqual([what, fresh]);
      const again = response(await laterCreate(input, options), "later");
      expect([`${what}, created again`, again.materializedFreshContent]).toEqual([`${what}, created again`, false]);
      expect(again.placement).toEqual(first.placement);
    }
    expect(ownedEntries(t.home)).toHaveLength(5);
  });

  test("reconcile removes this instance's unlisted workspaces", async () => {
    ok(await laterCreate(createInput("keep", directory(), { kind: "branch", branchName: "keep", baseRef: "main" })));
    const gone = response(await laterCreate(createInput("gone", directory(), { kind: "branch", branchName: "gone", baseRef: "main" })), "later");
    expect((await laterReconcile(["keep"])).stdout).toBe('{"type":"ok","protocolVersion":1}\n');
    expect(records(t.home).map((r) => r.workspaceId)).toEqual(["keep"]);
    expect(worktrees(repo)).not.toContain(gone.placement.cwd);
  });
});

describe("discovery creates", () => {
  test("same environment as a user workspace, no repository set-up: nothing seeded, fresh content still reported", async () => {
    const remote = makeRemote(repo, join(t.dir, "remote.git"));
    const seed = join(t.dir, "seed");
    mkdirSync(seed);
    writeFileSync(join(seed, "paseo.json"), "{}");
    const source = { kind: "git", url: remote, revision: "main", subdirectory: "app" };
    const user = response(await laterCreate(createInput("user", source, { kind: "existing" }, { seedPaseoConfigFrom: seed })), "later");
    const probe = response(await laterCreate(createInput("probe", source, { kind: "existing" }, { purpose: "discovery", seedPaseoConfigFrom: seed })), "later");
    expect(probe.materializedFreshContent).toBe(true);
    expect(probe.state.lifecycleEnvironment).toEqual(user.state.lifecycleEnvironment);
    expect(readdirSync(probe.placement.cwd).sort()).toEqual(readdirSync(user.placement.cwd).filter((name) => name !== "paseo.json").sort());
    expect(existsSync(join(user.placement.cwd, "paseo.json"))).toBe(true);
    expect(existsSync(join(probe.placement.cwd, "paseo.json"))).toBe(false);
  });

  test("a discovery create with a placement that would change a repository is refused before anything changes", async () => {
    const result = await laterCreate(createInput("probe", directory(), { kind: "branch", branchName: "probe", baseRef: "main" }, { purpose: "discovery" }));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('a discovery create runs no repository set-up, so it takes only an "existing" placement, got "branch"');
    expect(records(t.home)).toEqual([]);
    expect(worktrees(repo)).toEqual([repo]);
  });
});

describe("a workspace keeps the dialect it was created in", () => {
  const seedRequests = (id: string) => [
    op("create", id, { input: createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `b-${id}`, baseRef: "main" }), options: t.options }),
    op("inspect", id, { options: t.options }),
    op("pause", id, { options: t.options }),
    op("resume", id, { options: t.options }),
    op("destroy", id, { options: t.options }),
    op("reconcile", null, { options: t.options, workspaceIds: [id] }),
  ];
  const laterRequests = (id: string) => [
    laterCreate(createInput(id, directory(), { kind: "branch", branchName: `b-${id}`, baseRef: "main" })),
    laterOp("inspect", id),
    laterOp("pause", id),
    laterOp("resume", id),
    laterOp("destroy", id),
    laterReconcile([id]),
  ];

  test("a seed-dialect workspace refuses every later-dialect request and nothing changes", async () => {
    const created = ok(await op("create", "w1", { input: createInput("w1", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "b-w1", baseRef: "main" }), options: t.options }));
    const before = record(t.home, "w1");
    for (const result of await Promise.all(laterRequests("w1"))) {
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain('workspace "w1" was created in the seed protocol dialect (requests without runtimeInstanceId) and this request is in the later dialect');
      expect(result.stderr).toContain("nothing was changed");
    }
    expect(record(t.home, "w1")).toEqual(before);
    expect(worktrees(repo)).toEqual([repo, created.placement.cwd]);
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("ready");
  });

  test("a later-dialect workspace refuses every seed-dialect request and nothing changes", async () => {
    const created = response(await laterCreate(createInput("w1", directory(), { kind: "branch", branchName: "b-w1", baseRef: "main" })), "later");
    const before = record(t.home, "w1");
    for (const result of await Promise.all(seedRequests("w1"))) {
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain('workspace "w1" was created in the later protocol dialect (requests with runtimeInstanceId) and this request is in the seed dialect');
    }
    expect(record(t.home, "w1")).toEqual(before);
    expect(worktrees(repo)).toEqual([repo, created.placement.cwd]);
  });

  test("another runtime instance is an ownership mismatch for every request", async () => {
    ok(await laterCreate(createInput("w1", directory(), { kind: "branch", branchName: "b-w1", baseRef: "main" })));
    const before = record(t.home, "w1");
    const other = instanceIdOf("/home/someone-else/.paseo");
    const attempts = [
      await laterCreate(createInput("w1", directory(), { kind: "branch", branchName: "b-w1", baseRef: "main" }), t.options, other),
      await laterOp("inspect", "w1", t.options, other),
      await laterOp("pause", "w1", t.options, other),
      await laterOp("destroy", "w1", t.options, other),
      await laterReconcile(["w1"], t.options, other),
    ];
    for (const result of attempts) {
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`ownership mismatch: workspace "w1" belongs to runtime instance "${INSTANCE_ID}", not "${other}"`);
    }
    expect(record(t.home, "w1")).toEqual(before);
  });
});

describe("reconcile by runtimeInstanceId", () => {
  test("leaves other instances' and seed-dialect workspaces alone, with the very same options", async () => {
    const other = instanceIdOf("/srv/other-daemon");
    const branch = (id: string) => createInput(id, directory(), { kind: "branch", branchName: `b-${id}`, baseRef: "main" });
    ok(await laterCreate(branch("a1")));
    ok(await laterCreate(branch("a2")));
    const b1 = response(await laterCreate(branch("b1"), t.options, other), "later");
    const s1 = ok(await op("create", "s1", { input: createInput("s1", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "b-s1", baseRef: "main" }), options: t.options }));
    ok(await laterReconcile([]));
    expect(records(t.home).map((r) => r.workspaceId).sort()).toEqual(["b1", "s1"]);
    expect(worktrees(repo).sort()).toEqual([repo, b1.placement.cwd, s1.placement.cwd].sort());
    expect(response(await laterOp("inspect", "b1", t.options, other), "later").inspection.status).toBe("ready");
    ok(await op("reconcile", null, { options: t.options, workspaceIds: [] }));
    expect(records(t.home).map((r) => r.workspaceId)).toEqual(["b1"]);
  });
});

describe("bad bytes on stdin change nothing", () => {
  test("a request that mixes the dialects is refused, naming the dialect and the field", async () => {
    const result = await laterCreate(createInput("w1", { kind: "host-directory", path: repo }));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(
      'invalid lifecycle request: input.project.source.kind: Invalid type: expected ("directory" | "git"), got a string (read as the later dialect because it has runtimeInstanceId, but this field is written the seed dialect\'s way: a message must not mix the two dialects)',
    );
    const source = { kind: "git", url: `file://${repo}`, revision: "" };
    const seedWithPurpose = await op("create", "w1", { input: createInput("w1", source, { kind: "existing" }, { purpose: "discovery" }), options: t.options });
    expect(seedWithPurpose.code).toBe(1);
    expect(seedWithPurpose.stderr).toContain('input: unknown key "purpose" (read as the seed dialect because it has no runtimeInstanceId');
    expect(existsSync(t.home)).toBe(false);
  });

  test("a duplicate key is refused with its path, in both dialects, before anything is opened", async () => {
    const decoy = join(t.dir, "decoy");
    const texts = [
      `{"protocolVersion":1,"runtimeInstanceId":"${INSTANCE_ID}","input":${JSON.stringify(createInput("w1", directory()))},"options":{"stateDirectory":"${decoy}","stateDirectory":"${t.home}"}}`,
      `{"protocolVersion":1,"input":{"workspaceId":"w1","project":{"projectId":"p","source":{"kind":"host-directory","path":"${decoy}","path":"${repo}"}},"placement":{"kind":"existing"}},"options":${JSON.stringify(t.options)}}`,
      `{"protocolVersion":1,"runtimeInstanceId":"${INSTANCE_ID}","runtimeInstanceId":"${instanceIdOf("/x")}","input":${JSON.stringify(createInput("w1", directory()))},"options":${JSON.stringify(t.options)}}`,
    ];
    const expected = ['options: duplicate key "stateDirectory"', 'input.project.source: duplicate key "path"', 'duplicate key "runtimeInstanceId"'];
    for (const [index, text] of texts.entries()) {
      const result = await runBinary(["create", "--workspace-id", "w1"], { stdin: `${text}\n` });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(`invalid lifecycle request: ${expected[index]} (a JSON object must not repeat a key)`);
    }
    expect(existsSync(t.home)).toBe(false);
    expect(existsSync(decoy)).toBe(false);
  });
});
