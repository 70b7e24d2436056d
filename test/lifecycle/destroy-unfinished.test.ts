/**
 * Nothing lost, nothing hidden (issue 23). A destroy never crosses into what is mounted inside a
 * workspace (a bind mount of a host directory, a tmpfs, a bind-mounted file): it stops naming
 * the mount point and `umount …`. A destroy that cannot finish (that, or an immutable file)
 * leaves the workspace `error` on inspect with the reason, every other operation but destroy
 * refuses with the same words, `ls` and `doctor` show it, and the next destroy finishes it.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isLinux } from "../../src/platform/os.ts";
import { runBinary } from "../../kit/binary.ts";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec, type ExecResult } from "../support/daemon.ts";
import { create, createInput, ok, op } from "../support/operation.ts";
import { ownedEntries, record } from "../support/store.ts";
import { repoLab, git, worktrees } from "../support/git.ts";
import type { Lab } from "../../kit/scratch.ts";
import { skipBecause } from "../support/platform.ts";

/** True when this machine cannot run `what`, after printing why (platform.ts). */
function unable(what: string, probe: () => string | null): boolean {
  return skipBecause(`lifecycle/destroy-unfinished.test.ts, ${what}`, probe());
}

/** Bind mounts need Linux and root; tried once, for real, when the file loads. */
const NO_MOUNTS = unable("the mount point tests", () => {
  if (!isLinux) return "bind mounts are a Linux test";
  if (process.getuid?.() !== 0) return "mounting needs root";
  const dir = mkdtempSync("/tmp/phr-mount-probe-");
  try {
    mkdirSync(join(dir, "a"));
    mkdirSync(join(dir, "b"));
    const mounted = Bun.spawnSync(["mount", "--bind", join(dir, "a"), join(dir, "b")], { stderr: "pipe" });
    if (mounted.exitCode !== 0) return `mount --bind failed: ${mounted.stderr.toString().trim()}`;
    Bun.spawnSync(["umount", join(dir, "b")]);
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** chattr +i needs root (CAP_LINUX_IMMUTABLE) and a filesystem that keeps the flag. */
const NO_IMMUTABLE = unable("the immutable file test", () => {
  if (!isLinux) return "chattr is a Linux test";
  if (process.getuid?.() !== 0) return "chattr +i needs root";
  if (!Bun.which("chattr")) return "chattr is not installed (e2fsprogs)";
  const dir = mkdtempSync("/tmp/phr-chattr-probe-");
  try {
    writeFileSync(join(dir, "f"), "");
    const set = Bun.spawnSync(["chattr", "+i", join(dir, "f")], { stderr: "pipe" });
    if (set.exitCode !== 0) return `chattr +i failed here: ${set.stderr.toString().trim()}`;
    Bun.spawnSync(["chattr", "-i", join(dir, "f")]);
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

let t: Lab;
let repo: string;
/** Every mount a test made (workload or test), undone after it in reverse order. */
let mounts: string[] = [];
let immutable: string[] = [];
beforeEach(() => ({ t, repo } = repoLab("phr-unfinished-")));
afterEach(() => {
  for (const path of mounts.reverse()) if (isMounted(path)) Bun.spawnSync(["umount", "-l", path]);
  for (const path of immutable) Bun.spawnSync(["chattr", "-i", path]);
  mounts = [];
  immutable = [];
  t.cleanup();
});

function isMounted(path: string): boolean {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .some((line) => line.split(" ")[4] === path);
}

function umount(path: string): void {
  expect(Bun.spawnSync(["umount", path]).exitCode).toBe(0);
}

/** Runs `script` in the workspace as its workload, with `env` on top of PATH. */
async function workload(workspaceId: string, script: string, env: Record<string, string> = {}): Promise<ExecResult> {
  const handle = startExec(workspaceId, envelope(["/bin/sh", "-c", script], { options: t.options, env: { PATH, ...env } }));
  handle.closeStdin();
  const result = await handle.done;
  expect(result.code, result.stderr).toBe(0);
  return result;
}

/** A host directory that must survive every destroy: one file in it. */
function victim(name = "victim"): string {
  const dir = join(t.dir, name);
  mkdirSync(dir);
  writeFileSync(join(dir, "precious.txt"), "do not delete\n");
  return dir;
}

/** Every way a workspace that is not fully destroyed is refused, with `message` each time. */
async function expectRefusedEverywhere(workspaceId: string, input: { workspaceId: string }, message: string): Promise<void> {
  const inspected = ok(await op("inspect", workspaceId, { options: t.options }));
  expect(inspected.inspection).toEqual({ status: "error", message });
  for (const name of ["pause", "resume"]) {
    const refused = await op(name, workspaceId, { options: t.options });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(message);
  }
  const again = await create(t.options, input);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain(message);
  const handle = startExec(workspaceId, envelope(["true"], { options: t.options, env: { PATH } }));
  handle.closeStdin();
  const exec = await handle.done;
  expect(exec.code).toBe(1);
  expect(exec.events).toEqual([]);
  expect(exec.stderr).toContain(message);
}

/** `ls` and `doctor` show the unfinished destroy with the same words. */
async function expectShown(workspaceId: string, message: string): Promise<void> {
  const table = await runBinary(["ls", "--home", t.home]);
  expect(table.stdout).toMatch(new RegExp(`^${workspaceId} .* destroying \\(unfinished\\) `, "m"));
  expect(table.stdout).toContain(`! ${message} (paseo-host-runtime rm -w ${workspaceId} --home ${t.home})`);
  const listed = JSON.parse((await runBinary(["ls", "--home", t.home, "--json"])).stdout);
  expect(listed.workspaces.find((w: { workspaceId: string }) => w.workspaceId === workspaceId)).toMatchObject({ status: "destroying", unfinishedDestroy: message });
  const doctor = JSON.parse((await runBinary(["doctor", "--home", t.home, "--json"])).stdout);
  const database = doctor.checks.find((check: { name: string }) => check.name === "database");
  expect(database.status).toBe("warn");
  expect(database.detail).toContain("1 whose destroy did not finish");
}

const KINDS = {
  copy: (id: string) => {
    const plain = join(t.dir, "plain");
    mkdirSync(plain, { recursive: true });
    writeFileSync(join(plain, "file.txt"), "copied\n");
    return { options: { ...t.options, hostDirectory: "clone" }, input: createInput(id, { kind: "host-directory", path: plain }) };
  },
  worktree: (id: string) => ({ options: t.options, input: createInput(id, { kind: "host-directory", path: repo }, { kind: "branch", branchName: `topic-${id}`, baseRef: "main" }) }),
};

describe.skipIf(NO_MOUNTS)("a mount point inside a workspace", () => {
  test.each(Object.keys(KINDS) as (keyof typeof KINDS)[])("%s: destroy leaves the mounted directories intact, stops naming them, and finishes once they are unmounted", async (kind) => {
    const { options, input } = KINDS[kind]("w1");
    const root: string = ok(await create(options, input)).placement.cwd;
    const host = victim();
    // The workload (root) mounts a host directory (same filesystem: a bind mount), a tmpfs, and a host file.
    const hostFile = join(t.dir, "host-file.txt");
    writeFileSync(hostFile, "host file\n");
    mounts.push(join(root, "mnt"), join(root, "scratch"), join(root, "bound.txt"));
    await workload("w1", 'mkdir mnt scratch && touch bound.txt && mount --bind "$HOST" mnt && mount -t tmpfs tmpfs scratch && echo mine > scratch/f && mount --bind "$FILE" bound.txt', { HOST: host, FILE: hostFile });
    expect(readdirSync(join(root, "mnt"))).toEqual(["precious.txt"]);

    const destroyed = await op("destroy", "w1", { options: t.options });
    expect(destroyed.code).toBe(1);
    for (const point of ["mnt", "scratch", "bound.txt"]) expect(destroyed.stderr).toContain(join(root, point));
    expect(destroyed.stderr).toContain(`umount ${join(root, "mnt")}`);
    expect(readFileSync(join(host, "precious.txt"), "utf8")).toBe("do not delete\n");
    expect(readFileSync(join(root, "scratch", "f"), "utf8")).toBe("mine\n");
    expect(readFileSync(hostFile, "utf8")).toBe("host file\n");

    const message: string = ok(await op("inspect", "w1", { options: t.options })).inspection.message;
    expect(message).toStartWith('workspace "w1" is not fully destroyed: ');
    expect(message).toContain(`umount ${join(root, "mnt")}`);
    expect(message).toContain("destroy it again to finish");
    expect(destroyed.stderr).toContain(message);
    await expectRefusedEverywhere("w1", input, message);
    await expectShown("w1", message);

    // Still stopped while one is left.
    umount(join(root, "mnt"));
    umount(join(root, "bound.txt"));
    const second = await op("destroy", "w1", { options: t.options });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`umount ${join(root, "scratch")}`);
    expect(second.stderr).not.toContain(`umount ${join(root, "mnt")}`);
    umount(join(root, "scratch"));
    ok(await op("destroy", "w1", { options: t.options }));
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection).toEqual({ status: "missing" });
    expect(ownedEntries(t.home)).toEqual([]);
    expect(readFileSync(join(host, "precious.txt"), "utf8")).toBe("do not delete\n");
    expect(readFileSync(hostFile, "utf8")).toBe("host file\n");
    if (kind === "worktree") {
      expect(worktrees(repo)).toEqual([repo]);
      expect(git(repo, "branch", "--list", "topic-w1")).toContain("topic-w1");
    }
  });

  test("reconcile destroys every other unlisted workspace, fails naming the one it cannot finish, and finishes it once unmounted", async () => {
    const { options, input } = KINDS.copy("stuck");
    const root: string = ok(await create(options, input)).placement.cwd;
    ok(await create(options, KINDS.copy("plain").input));
    ok(await create(options, KINDS.copy("kept").input));
    const host = victim();
    mounts.push(join(root, "mnt"));
    await workload("stuck", 'mkdir mnt && mount --bind "$HOST" mnt', { HOST: host });
    const reconciled = await op("reconcile", null, { options, workspaceIds: ["kept"] });
    expect(reconciled.code).toBe(1);
    expect(reconciled.stderr).toContain("could not finish destroying 1 workspace(s)");
    expect(reconciled.stderr).toContain(`umount ${join(root, "mnt")}`);
    expect(record(t.home, "plain")).toBeNull();
    expect(record(t.home, "kept")?.status).toBe("ready");
    expect(record(t.home, "stuck")?.status).toBe("destroying");
    expect(readFileSync(join(host, "precious.txt"), "utf8")).toBe("do not delete\n");
    umount(join(root, "mnt"));
    ok(await op("reconcile", null, { options, workspaceIds: ["kept"] }));
    expect(record(t.home, "stuck")).toBeNull();
    expect(existsSync(root)).toBe(false);
  });
});

describe.skipIf(NO_IMMUTABLE)("an immutable file inside a workspace", () => {
  test("the destroy it blocks answers error on inspect until a repeat finishes it", async () => {
    const { options, input } = KINDS.copy("w1");
    const root: string = ok(await create(options, input)).placement.cwd;
    const locked = join(root, "locked.txt");
    writeFileSync(locked, "pinned\n");
    immutable.push(locked);
    expect(Bun.spawnSync(["chattr", "+i", locked]).exitCode).toBe(0);

    const destroyed = await op("destroy", "w1", { options: t.options });
    expect(destroyed.code).toBe(1);
    expect(destroyed.stderr).toContain(`could not remove ${locked} (EPERM)`);
    const message: string = ok(await op("inspect", "w1", { options: t.options })).inspection.message;
    expect(message).toStartWith('workspace "w1" is not fully destroyed: ');
    expect(message).toContain("chattr -i");
    await expectRefusedEverywhere("w1", input, message);
    await expectShown("w1", message);

    expect(Bun.spawnSync(["chattr", "-i", locked]).exitCode).toBe(0);
    ok(await op("destroy", "w1", { options: t.options }));
    expect(ok(await op("inspect", "w1", { options: t.options })).inspection).toEqual({ status: "missing" });
    expect(ownedEntries(t.home)).toEqual([]);
    // What is missing again may be created again.
    ok(await create(options, input));
  });
});
