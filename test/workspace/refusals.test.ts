/**
 * Every refusal of a workspace has its own class and its one text, and the first reason that
 * applies is the one given: no row, another's, a create not finished, a destroy under way,
 * paused, less isolation. The texts are the ones the daemon has always seen (the end-to-end
 * tests assert them too).
 */
import { describe, expect, test } from "bun:test";
import { identityOfProcess, readProcess, selfIdentity } from "../../src/platform/process.ts";
import { recordOf } from "../support/records.ts";
import { LessIsolation, requireIsolation } from "../../src/sandbox/isolation.ts";
import type { Ownership } from "../../src/workspace/owner.ts";
import {
  BeingDestroyed,
  checkWorkspace,
  destroyRefusal,
  DestroyUnfinished,
  OtherDialect,
  OtherOwner,
  refusalOf,
  WorkspaceBusy,
  WorkspaceMissing,
  WorkspacePaused,
  WorkspaceRefused,
} from "../../src/workspace/refusals.ts";

const WHO: Ownership = { owner: "me", dialect: "seed", instanceId: null, configuration: "c" };
/** recordOf()'s workspace, owner, dialect and configuration. */
const ID = "ws-1";

/** A process that runs for the whole test and is not this one: the test runner's parent. */
const other = identityOfProcess({ pid: process.ppid, startTicks: readProcess(process.ppid)!.startTicks });

describe("refusalOf", () => {
  test("no row, and a create not finished: WorkspaceMissing, `does not exist`", () => {
    for (const found of [null, recordOf({ status: "creating" })]) {
      const refusal = refusalOf(found, ID, WHO);
      expect(refusal).toBeInstanceOf(WorkspaceMissing);
      expect(refusal!.message).toBe('workspace "ws-1" does not exist');
    }
  });

  test("another owner or runtime instance: OtherOwner; the other dialect: OtherDialect; before a create not finished", () => {
    const owner = refusalOf(recordOf({ owner: "them", status: "creating" }), ID, WHO);
    expect(owner).toBeInstanceOf(OtherOwner);
    expect(owner!.message).toBe('ownership mismatch: workspace "ws-1" belongs to owner "them", not "me"; nothing was changed');
    const instance = refusalOf(recordOf({ dialect: "later", instanceId: "i-1" }), ID, { ...WHO, dialect: "later", instanceId: "i-2" });
    expect(instance).toBeInstanceOf(OtherOwner);
    expect(instance!.message).toBe('ownership mismatch: workspace "ws-1" belongs to runtime instance "i-1", not "i-2"; nothing was changed');
    const dialect = refusalOf(recordOf({ dialect: "later", instanceId: "i-1" }), ID, WHO);
    expect(dialect).toBeInstanceOf(OtherDialect);
    expect(dialect!.message).toBe(
      'workspace "ws-1" was created in the later protocol dialect (requests with runtimeInstanceId) and this request is in the seed dialect; a workspace keeps the dialect it was created in; nothing was changed',
    );
  });

  test("a destroy running in a live process: WorkspaceBusy; one that stopped or died: DestroyUnfinished", () => {
    const busy = refusalOf(recordOf({ status: "destroying", lock: other }), ID, WHO);
    expect(busy).toBeInstanceOf(WorkspaceBusy);
    expect(busy).toBeInstanceOf(BeingDestroyed);
    expect(busy!.message).toBe(`workspace "ws-1" is being destroyed (pid ${other.pid}); nothing else may use it`);
    const stopped = refusalOf(recordOf({ status: "destroying", destroyProblem: "a mount point inside" }), ID, WHO);
    expect(stopped).toBeInstanceOf(DestroyUnfinished);
    expect(stopped).toBeInstanceOf(BeingDestroyed);
    expect(stopped!.message).toBe(`workspace "ws-1" is not fully destroyed: a mount point inside; destroy it again to finish (what is left stays the workspace's until then)`);
    const died = destroyRefusal(recordOf({ status: "destroying", lock: { ...other, startTicks: other.startTicks + 1 } }));
    expect(died).toBeInstanceOf(DestroyUnfinished);
    expect(died!.message).toBe(`workspace "ws-1" is not fully destroyed: its destroy was interrupted (pid ${other.pid} is gone); destroy it again to finish (what is left stays the workspace's until then)`);
    // This process's own lock is no live holder of another's: its destroy is its own to finish.
    expect(destroyRefusal(recordOf({ status: "destroying", lock: selfIdentity() }))).toBeInstanceOf(DestroyUnfinished);
  });

  test("paused refuses only what needs a ready workspace", () => {
    const paused = recordOf({ status: "paused" });
    expect(refusalOf(paused, ID, WHO)).toBeNull();
    const refusal = refusalOf(paused, ID, WHO, { ready: true });
    expect(refusal).toBeInstanceOf(WorkspacePaused);
    expect(refusal!.message).toBe('workspace "ws-1" is paused');
    expect(refusalOf(recordOf({}), ID, WHO, { ready: true })).toBeNull();
  });

  test("checkWorkspace returns the usable record and throws the refusal, a WorkspaceRefused naming its workspace", () => {
    const usable = recordOf({});
    expect(checkWorkspace(usable, ID, WHO)).toBe(usable);
    let thrown: unknown;
    try {
      checkWorkspace(null, ID, WHO);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(WorkspaceRefused);
    expect((thrown as WorkspaceRefused).workspaceId).toBe(ID);
  });
});

test("less isolation than recorded: LessIsolation, saying what did not happen", () => {
  const sandboxed = recordOf({ isolation: { isolation: "sandbox", network: "none", sandboxReadOnly: [], sandboxReadWrite: [] } });
  expect(() => requireIsolation(sandboxed, { isolation: "none" }, "launched")).toThrow(
    new LessIsolation(ID, 'workspace "ws-1" was created with isolation "sandbox" (network "none", sandboxReadOnly [], sandboxReadWrite []) and keeps it; this request asks for less (isolation "none"); nothing was launched'),
  );
  expect(() => requireIsolation(sandboxed, { isolation: "sandbox", network: "none", sandboxReadOnly: [], sandboxReadWrite: [] }, "changed")).not.toThrow();
  expect(() => requireIsolation(recordOf({}), { isolation: "none" }, "changed")).not.toThrow();
});
