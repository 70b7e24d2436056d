/**
 * Reconcile never takes another configuration's work (issue 23). Two runtimes configured with the
 * same explicit owner share a home without destroying each other's workspaces; an edited
 * configuration adopts what the daemon still lists, and the rest become orphans that no
 * reconcile removes: `ls` marks them with the date their configuration last listed them, and
 * `orphans` removes them when asked (dry run by default, live work refused without --force).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary } from "../../kit/binary.ts";
import { PATH, envelope, laterEnvelope } from "../../kit/envelope.ts";
import { startExec, type ExecHandle } from "../support/daemon.ts";
import { createInput, later, ok, op } from "../support/operation.ts";
import { record, records } from "../support/store.ts";
import type { Lab } from "../../kit/scratch.ts";
import { repoLab, git } from "../support/git.ts";

let t: Lab;
let repo: string;
const running: ExecHandle[] = [];
beforeEach(() => ({ t, repo } = repoLab("phr-orphans-")));
afterEach(async () => {
  for (const handle of running.splice(0)) {
    handle.child.kill("SIGKILL");
    await handle.exited;
  }
  t.cleanup();
});

type Dialect = "seed" | "later";
const OWNER = "my-machine";
const ids = () => records(t.home).map((row) => row.workspaceId).sort();

/** The daemon's requests for one configured runtime (its options) in one dialect. */
function runtime(extra: Record<string, unknown>, dialect: Dialect) {
  const options = { ...t.options, owner: OWNER, ...extra };
  const body = (fields: Record<string, unknown>) => (dialect === "later" ? later({ ...fields, options }) : { ...fields, options });
  const kind = dialect === "later" ? "directory" : "host-directory";
  return {
    options,
    create: (id: string) => op("create", id, body({ input: createInput(id, { kind, path: repo }, { kind: "branch", branchName: `b-${id}`, baseRef: "main" }) })),
    inspect: (id: string) => op("inspect", id, body({})),
    reconcile: (workspaceIds: string[]) => op("reconcile", null, body({ workspaceIds })),
    exec: (id: string, argv: string[]) => startExec(id, (dialect === "later" ? laterEnvelope : envelope)(argv, { options, env: { PATH } })),
  };
}

/** What an agent leaves in a workspace: an uncommitted file and a commit on its branch. */
function agentWork(root: string): string {
  writeFileSync(join(root, "work.txt"), "agent work\n");
  git(root, "add", "work.txt");
  git(root, "commit", "-q", "-m", "agent commit");
  writeFileSync(join(root, "draft.txt"), "not committed yet\n");
  return git(root, "rev-parse", "HEAD");
}

async function operator(args: string[]) {
  return await runBinary([...args, "--home", t.home, "--owner", OWNER]);
}

describe.each(["seed", "later"] as Dialect[])("two configurations, one explicit owner (%s dialect)", (dialect) => {
  test("each reconciles without touching the other's workspaces, agent work included", async () => {
    const a = runtime({}, dialect);
    const b = runtime({ stopTimeoutMs: 1500 }, dialect);
    const rootA: string = ok(await a.create("a1")).placement.cwd;
    ok(await b.create("b1"));
    const commit = agentWork(rootA);
    // The daemon reconciles each configured runtime with its own ids, again and again.
    for (let round = 0; round < 2; round++) {
      ok(await a.reconcile(["a1"]));
      ok(await b.reconcile(["b1"]));
    }
    expect(ids()).toEqual(["a1", "b1"]);
    expect(ok(await a.inspect("a1")).inspection.status).toBe("ready");
    expect(readFileSync(join(rootA, "draft.txt"), "utf8")).toBe("not committed yet\n");
    expect(git(rootA, "rev-parse", "HEAD")).toBe(commit);
    // Neither is anyone's orphan: no configuration took over the other's.
    expect(records(t.home).map((row) => row.orphanedAt)).toEqual([null, null]);
    ok(await b.reconcile([]));
    expect(ids()).toEqual(["a1"]);
  });
});

describe("an edited configuration leaves orphans", () => {
  test("what it lists is adopted; the rest no reconcile removes, ls marks with the date, orphans removes when asked", async () => {
    const before = runtime({}, "seed");
    const edited = runtime({ stopTimeoutMs: 900 }, "seed");
    for (const id of ["kept", "old1", "old2"]) ok(await before.create(id));
    // Made and so last listed by their configuration at create.
    const since = (id: string) => new Date(record(t.home, id)!.createdAt).toISOString();
    ok(await edited.reconcile(["kept"]));
    expect(record(t.home, "kept")?.orphanedAt).toBeNull();
    const orphanedAt = record(t.home, "old1")?.orphanedAt;
    expect(orphanedAt).toBeNumber();
    expect(record(t.home, "old2")?.orphanedAt).toBe(orphanedAt!);

    // Never destroyed by a reconcile: neither the edited configuration's nor the old one's.
    ok(await edited.reconcile(["kept"]));
    ok(await before.reconcile([]));
    expect(ids()).toEqual(["kept", "old1", "old2"]);
    // Still workspaces: every operation works on them, ownership is the owner.
    expect(ok(await edited.inspect("old1")).inspection.status).toBe("ready");

    const shown = await operator(["ls"]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`! old1: an orphan: its configuration has not listed it since ${since("old1")}`);
    expect(shown.stdout).toContain(`! old2: an orphan: its configuration has not listed it since ${since("old2")}`);
    expect(shown.stdout).not.toContain("! kept:");
    const json = JSON.parse((await operator(["ls", "--json"])).stdout) as { workspaces: { workspaceId: string; listedAt: string; orphanedAt: string | null }[] };
    expect(json.workspaces.map((w) => [w.workspaceId, w.orphanedAt !== null])).toEqual([
      ["kept", false],
      ["old1", true],
      ["old2", true],
    ]);
    expect(json.workspaces.find((w) => w.workspaceId === "old1")?.listedAt).toBe(since("old1"));

    // Live work in old2.
    const handle = edited.exec("old2", ["sleep", "30"]);
    running.push(handle);
    await handle.waitEvent("started");

    const dry = await operator(["orphans"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain("2 orphan(s) of owner");
    expect(dry.stdout).toContain("dry run: nothing was changed");
    expect(ids()).toEqual(["kept", "old1", "old2"]);

    const removed = await operator(["orphans", "--remove"]);
    expect(removed.code).toBe(1);
    expect(removed.stdout).toContain("  removed: old1 ");
    expect(removed.stdout).toContain("  refused: old2 ");
    expect(ids()).toEqual(["kept", "old2"]);
    expect(record(t.home, "old2")?.status).toBe("ready");

    const forced = JSON.parse((await operator(["orphans", "--remove", "--force", "--json"])).stdout);
    expect(forced.orphans).toMatchObject([{ workspaceId: "old2", outcome: "removed" }]);
    expect((await handle.done).events.at(-1)).toMatchObject({ type: "exit", signal: "SIGTERM" });
    expect(ids()).toEqual(["kept"]);
    // Removed as destroy removes: its worktree is gone, its branch (its commits) kept.
    expect(git(repo, "worktree", "list")).not.toContain("old2");
    expect(git(repo, "branch", "--list", "b-old2")).toContain("b-old2");
  });

  test("--force without --remove is a usage error and changes nothing", async () => {
    const result = await operator(["orphans", "--force"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--force goes with --remove");
  });
});
