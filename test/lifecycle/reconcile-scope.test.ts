/**
 * Reconcile scope (issue 13): the daemon reconciles once per configured runtime, identified by
 * its whole configuration. Two configured runtimes sharing a home and an owner (the default one,
 * or since issue 23 an explicit one), but differing in any option, never remove each other's
 * workspaces; an edited option adopts what the daemon still lists.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createInput, later, ok, op } from "../support/operation.ts";
import { record, records } from "../support/store.ts";
import type { Lab } from "../../kit/scratch.ts";
import { repoLab, worktrees } from "../support/git.ts";

let t: Lab;
let repo: string;
beforeEach(() => ({ t, repo } = repoLab("phr-scope-")));
afterEach(() => t.cleanup());

type Dialect = "seed" | "later";
const ids = () => records(t.home).map((row) => row.workspaceId).sort();

/** The daemon's requests for one configured runtime (its options) in one dialect. */
function runtime(options: Record<string, unknown>, dialect: Dialect) {
  const body = (fields: Record<string, unknown>) => (dialect === "later" ? later({ ...fields, options }) : { ...fields, options });
  const kind = dialect === "later" ? "directory" : "host-directory";
  return {
    create: (id: string) => op("create", id, body({ input: createInput(id, { kind, path: repo }, { kind: "branch", branchName: `b-${id}`, baseRef: "main" }) })),
    inspect: (id: string) => op("inspect", id, body({})),
    reconcile: (workspaceIds: string[]) => op("reconcile", null, body({ workspaceIds })),
  };
}

describe.each(["seed", "later"] as Dialect[])("two configurations, one home (%s dialect)", (dialect) => {
  test("reconcile of each keeps the other's workspaces", async () => {
    // The out-of-box case: both use the default owner; they differ in one option.
    const a = runtime(t.options, dialect);
    const b = runtime({ ...t.options, stopTimeoutMs: 1500 }, dialect);
    ok(await a.create("a1"));
    ok(await b.create("b1"));
    ok(await a.reconcile(["a1"]));
    ok(await b.reconcile(["b1"]));
    expect(ids()).toEqual(["a1", "b1"]);
    ok(await a.reconcile([]));
    expect(ids()).toEqual(["b1"]);
    expect(ok(await b.inspect("b1")).inspection.status).toBe("ready");
    ok(await b.reconcile([]));
    expect(ids()).toEqual([]);
    expect(worktrees(repo)).toEqual([repo]);
  });

  test("the order of the options in the daemon's config is not a different configuration", async () => {
    const a = runtime({ stopTimeoutMs: 1500, ...t.options, lifecycleEnvironment: { X: "1", Y: "2" } }, dialect);
    const reordered = runtime({ lifecycleEnvironment: { Y: "2", X: "1" }, ...t.options, stopTimeoutMs: 1500 }, dialect);
    ok(await a.create("a1"));
    ok(await reordered.reconcile([]));
    expect(ids()).toEqual([]);
  });

  test("an edited option: listed workspaces are adopted, unlisted ones of the old configuration left alone, all stay usable", async () => {
    const before = runtime(t.options, dialect);
    const edited = runtime({ ...t.options, stopTimeoutMs: 900 }, dialect);
    ok(await before.create("kept"));
    ok(await before.create("old"));
    const stamp = record(t.home, "kept")!.configuration;
    ok(await edited.reconcile(["kept"]));
    expect(ids()).toEqual(["kept", "old"]);
    expect(record(t.home, "kept")!.configuration).not.toBe(stamp);
    expect(record(t.home, "old")!.configuration).toBe(stamp);
    // Every operation still works on both: ownership is the owner, not the configuration.
    expect(ok(await edited.inspect("old")).inspection.status).toBe("ready");
    ok(await edited.reconcile([]));
    expect(ids()).toEqual(["old"]);
  });
});

describe("an explicit owner is scoped by configuration too (issue 23)", () => {
  test("a configuration with its own owner reconciles only what that configuration made", async () => {
    const alice = runtime({ ...t.options, owner: "alice" }, "seed");
    const aliceEdited = runtime({ ...t.options, owner: "alice", stopTimeoutMs: 900 }, "seed");
    const other = runtime(t.options, "seed");
    ok(await alice.create("a1"));
    ok(await other.create("d1"));
    ok(await aliceEdited.reconcile([]));
    expect(ids()).toEqual(["a1", "d1"]);
    ok(await alice.reconcile([]));
    expect(ids()).toEqual(["d1"]);
    ok(await other.reconcile(["d1"]));
    expect(ids()).toEqual(["d1"]);
  });
});
