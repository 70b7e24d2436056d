/**
 * A workload attacks its own workspace boundary, as an attacker did (issue 12): it replaces
 * its root, or its worktree's directory, with a symlink or another directory. The runtime must
 * notice at inspect, refuse exec (the helper's too) and resume, and destroy must delete or let
 * git delete nothing but what the workspace owns.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { create, createInput, ok, op } from "../support/operation.ts";
import { makeRepo, worktrees } from "../support/git.ts";
import { record, withStore } from "../support/store.ts";
import { lab, type Lab } from "../../kit/scratch.ts";

let t: Lab;
beforeEach(() => {
  t = lab("phr-confine-");
});
afterEach(() => t.cleanup());

/** Runs `script` with /bin/sh in the workspace, as the daemon would start a workload. */
async function workload(workspaceId: string, script: string, env: Record<string, string> = {}, fields: Record<string, unknown> = {}): Promise<ExecResult> {
  const handle = startExec(workspaceId, envelope(["/bin/sh", "-c", script], { options: t.options, env: { PATH, ...env }, ...fields }));
  handle.closeStdin();
  return await handle.done;
}

/** The attack: from inside its root, the workload moves the root away and plants a symlink to `target` there. */
const SWAP_ROOT_FOR_SYMLINK = 'here=$(pwd -P); cd .. && mv "$here" "$here.moved" && ln -s "$TARGET" "$here"';

/** Asserts an exec was refused before launch: exit 1, no lifecycle event, `marker` never made. */
async function expectRefused(workspaceId: string, marker: string, message: string, fields: Record<string, unknown> = {}): Promise<void> {
  const result = await workload(workspaceId, `touch "${marker}"`, {}, fields);
  expect(result.code).toBe(1);
  expect(result.events).toEqual([]);
  expect(result.stderr).toContain(`workspace "${workspaceId}" is not usable`);
  expect(result.stderr).toContain(message);
  expect(existsSync(marker)).toBe(false);
}

function plainProject(name: string): string {
  const dir = join(t.dir, name);
  mkdirSync(dir);
  writeFileSync(join(dir, "file.txt"), "mine\n");
  return dir;
}

describe("a root replaced by a symlink", () => {
  test("adopted root: inspect answers error, exec and the helper are refused, resume refuses, destroy follows nothing", async () => {
    const root = plainProject("project");
    const outside = plainProject("outside");
    ok(await create(t.options, createInput("w1", { kind: "host-directory", path: root })));
    const attack = await workload("w1", SWAP_ROOT_FOR_SYMLINK, { TARGET: outside });
    expect(attack.code).toBe(0);
    expect(readlinkSync(root)).toBe(outside);

    const inspected = ok(await op("inspect", "w1", { options: t.options }));
    expect(inspected.inspection).toEqual({
      status: "error",
      message: `workspace "w1" root ${root} was replaced by a symlink (to ${outside}); it is no longer the directory this workspace was created with`,
    });
    await expectRefused("w1", "escaped-workload", "replaced by a symlink");
    // The helper's only confinement is its cwd: it is refused the same way.
    await expectRefused("w1", "escaped-helper", "replaced by a symlink", { purpose: { kind: "workspace-helper" } });
    expect(existsSync(join(outside, "escaped-workload")) || existsSync(join(outside, "escaped-helper"))).toBe(false);

    ok(await op("pause", "w1", { options: t.options }));
    const resumed = await op("resume", "w1", { options: t.options });
    expect(resumed.code).toBe(1);
    expect(resumed.stderr).toContain('cannot resume workspace "w1"');
    expect(resumed.stderr).toContain("replaced by a symlink");

    ok(await op("destroy", "w1", { options: t.options }));
    expect(readFileSync(join(outside, "file.txt"), "utf8")).toBe("mine\n");
    expect(readFileSync(join(`${root}.moved`, "file.txt"), "utf8")).toBe("mine\n");
    expect(lstatSync(root).isSymbolicLink()).toBe(true);
  });

  test("a worktree replaced by a symlink to another workspace's worktree: destroy leaves that worktree and its registration alone", async () => {
    const repo = makeRepo(join(t.dir, "repo"));
    const a = ok(await create(t.options, createInput("a", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic-a", baseRef: "main" })));
    const b = ok(await create(t.options, createInput("b", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic-b", baseRef: "main" })));
    const rootA: string = a.placement.cwd;
    const rootB: string = b.placement.cwd;
    writeFileSync(join(rootB, "work-in-b.txt"), "unpushed\n");

    expect((await workload("a", SWAP_ROOT_FOR_SYMLINK, { TARGET: rootB })).code).toBe(0);
    const inspected = ok(await op("inspect", "a", { options: t.options }));
    expect(inspected.inspection.status).toBe("error");
    expect(inspected.inspection.message).toContain(`root ${rootA} was replaced by a symlink (to ${rootB})`);
    await expectRefused("a", join(rootB, "escaped"), "replaced by a symlink");

    const destroyed = await op("destroy", "a", { options: t.options });
    expect(destroyed.code).toBe(0);
    expect(destroyed.stderr).toContain(`not letting git remove ${rootA}`);
    expect(readFileSync(join(rootB, "work-in-b.txt"), "utf8")).toBe("unpushed\n");
    expect(worktrees(repo)).toEqual([repo, rootB]);
    expect(ok(await op("inspect", "b", { options: t.options })).inspection.status).toBe("ready");
    expect((await workload("b", "cat work-in-b.txt")).stdout.toString()).toBe("unpushed\n");
    expect(existsSync(rootA)).toBe(false);
  });

  test("a worktree's subdirectory root (relativeCwd) turned into a symlink, even one inside, is refused", async () => {
    const repo = makeRepo(join(t.dir, "repo"));
    const created = ok(await create(t.options, createInput("w1", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main", relativeCwd: "app" })));
    const root: string = created.placement.cwd;
    // Same directory, same inode, now reached through a symlink that stays inside the worktree.
    expect((await workload("w1", 'cd .. && mv app app.real && ln -s app.real app')).code).toBe(0);
    const inspected = ok(await op("inspect", "w1", { options: t.options }));
    expect(inspected.inspection.status).toBe("error");
    expect(inspected.inspection.message).toContain(`root ${root} is no longer reached from`);
    await expectRefused("w1", join(root, "escaped"), "without symlinks");
  });
});

describe("a root replaced by another directory", () => {
  test("a copy whose root became a fresh directory at the same path is an error, and exec is refused", async () => {
    const source = plainProject("plain");
    const created = ok(await create({ ...t.options, hostDirectory: "clone" }, createInput("w1", { kind: "host-directory", path: source })));
    const root: string = created.placement.cwd;
    expect((await workload("w1", 'here=$(pwd -P); cd .. && mv "$here" "$here.old" && mkdir "$here"')).code).toBe(0);
    const inspected = ok(await op("inspect", "w1", { options: t.options }));
    expect(inspected.inspection.status).toBe("error");
    expect(inspected.inspection.message).toContain(`root ${root} was replaced: it is another directory than the one this workspace was created with`);
    await expectRefused("w1", join(root, "escaped"), "was replaced");
    ok(await op("destroy", "w1", { options: t.options }));
    expect(existsSync(root)).toBe(false);
  });

  test("a worktree whose .git no longer names our registration is not ours: inspect error, destroy leaves git out", async () => {
    const repo = makeRepo(join(t.dir, "repo"));
    const a = ok(await create(t.options, createInput("a", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic-a", baseRef: "main" })));
    const b = ok(await create(t.options, createInput("b", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic-b", baseRef: "main" })));
    const rootA: string = a.placement.cwd;
    const gitB = readFileSync(join(b.placement.cwd, ".git"), "utf8");
    expect((await workload("a", `printf '%s' "$GITFILE" > .git`, { GITFILE: gitB })).code).toBe(0);
    const inspected = ok(await op("inspect", "a", { options: t.options }));
    expect(inspected.inspection.message).toContain(`worktree ${rootA} is no longer ours: its .git names`);
    const destroyed = await op("destroy", "a", { options: t.options });
    expect(destroyed.code).toBe(0);
    expect(destroyed.stderr).toContain(`not letting git remove ${rootA}`);
    expect(worktrees(repo)).toEqual([repo, b.placement.cwd]);
    expect(ok(await op("inspect", "b", { options: t.options })).inspection.status).toBe("ready");
  });
});

describe("identity is recorded at create and renewed only by a resume that re-adds a worktree", () => {
  test("create records device:inode of root and checkout and the worktree registration", async () => {
    const repo = makeRepo(join(t.dir, "repo"));
    const created = ok(await create(t.options, createInput("w1", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main", relativeCwd: "app" })));
    const root: string = created.placement.cwd;
    const checkout = join(root, "..");
    const id = (path: string) => {
      const stat = lstatSync(path, { bigint: true });
      return `${stat.dev}:${stat.ino}`;
    };
    const gitdir = readFileSync(join(checkout, ".git"), "utf8").trim().replace(/^gitdir: /, "");
    expect(record(t.home, "w1")!.confinement).toEqual({ root: id(root), checkout: id(checkout), gitdir });
    expect(gitdir.startsWith(join(repo, ".git", "worktrees") + "/")).toBe(true);
  });

  test("a device number changed across a reboot (same inode, path free of symlinks) is the same root; exec records the new number", async () => {
    const root = plainProject("project");
    ok(await create(t.options, createInput("w1", { kind: "host-directory", path: root })));
    const actual = record(t.home, "w1")!.confinement!.root;
    const [dev, ino] = actual.split(":");
    const renumbered = `${BigInt(dev!) + 7n}:${ino}`;
    withStore(t.home, (db) => db.run("UPDATE workspaces SET root_identity = ?1 WHERE workspace_id = 'w1'", [renumbered]));
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("ready");
    expect(record(t.home, "w1")!.confinement!.root).toBe(renumbered);
    expect((await workload("w1", "/bin/pwd -P")).stdout.toString()).toBe(`${root}\n`);
    expect(record(t.home, "w1")!.confinement!.root).toBe(actual);
    // Another inode is never "renumbered".
    withStore(t.home, (db) => db.run("UPDATE workspaces SET root_identity = ?1 WHERE workspace_id = 'w1'", [`${dev}:${BigInt(ino!) + 1n}`]));
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("error");
  });

  test("a vanished worktree re-added by resume gets its new identity recorded and runs workloads again", async () => {
    const repo = makeRepo(join(t.dir, "repo"));
    const created = ok(await create(t.options, createInput("w1", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic", baseRef: "main" })));
    const root: string = created.placement.cwd;
    const before = record(t.home, "w1")!.confinement!;
    renameSync(root, `${root}.gone`);
    ok(await op("pause", "w1", { options: t.options }));
    ok(await op("resume", "w1", { options: t.options }));
    const after = record(t.home, "w1")!.confinement!;
    expect(after.root).not.toBe(before.root);
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("ready");
    const result = await workload("w1", "/bin/pwd -P");
    expect(result.stdout.toString()).toBe(`${root}\n`);
  });
});
