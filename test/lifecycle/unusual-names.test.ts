/**
 * An attack on issue 23 (nothing lost, nothing hidden) that the other lifecycle tests do
 * not already make: names a workload can give its files that are not text.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, readdirSync, readlinkSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { PATH, envelope } from "../../kit/envelope.ts";
import { startExec } from "../support/daemon.ts";
import { create, createInput, ok, op } from "../support/operation.ts";
import { lab, type Lab } from "../../kit/scratch.ts";
import { git, makeRemote, makeRepo } from "../support/git.ts";
import { ownedEntries, record } from "../support/store.ts";
import { until } from "../support/poll.ts";

let t: Lab;
beforeEach(() => (t = lab("phr-names-")));
afterEach(() => t.cleanup());

test("files and directories whose names are not UTF-8 (or hold a newline) are removed by destroy, which finishes", async () => {
  const plain = join(t.dir, "plain");
  mkdirSync(plain);
  writeFileSync(join(plain, "file.txt"), "copied\n");
  const input = createInput("w1", { kind: "host-directory", path: plain });
  const root: string = ok(await create({ ...t.options, hostDirectory: "clone" }, input)).placement.cwd;
  // printf's octal escapes make the raw bytes: 0xff 0xfe, a lone 0xc3, a newline.
  const script = "mkdir \"$(printf 'd\\377')\" && touch \"$(printf 'd\\377/bad\\377\\376name')\" \"$(printf 'lone\\303')\" \"$(printf 'new\\nline')\" && mkdir -p sub && touch \"$(printf 'sub/\\377')\"";
  const handle = startExec("w1", envelope(["/bin/sh", "-c", script], { options: t.options, env: { PATH } }));
  handle.closeStdin();
  const ran = await handle.done;
  expect(ran.code, ran.stderr).toBe(0);

  const destroyed = await op("destroy", "w1", { options: t.options });
  expect(destroyed.stderr).toBe("");
  expect(destroyed.code).toBe(0);
  expect(existsSync(root)).toBe(false);
  expect(ok(await op("inspect", "w1", { options: t.options })).inspection).toEqual({ status: "missing" });
  expect(ownedEntries(t.home)).toEqual([]);
});

test("a clone of a host directory keeps names and symlink targets that are not UTF-8, byte for byte", async () => {
  const plain = join(t.dir, "plain");
  mkdirSync(plain);
  const bytes = (text: string) => Buffer.from(text, "latin1");
  const at = (...parts: string[]) => Buffer.concat([bytes(`${plain}/`), bytes(parts.join("/"))]);
  mkdirSync(at("d\xff"));
  writeFileSync(at("d\xff", "f\xfe"), "inner\n");
  writeFileSync(at("a\xc3"), "lone byte\n");
  linkSync(at("a\xc3"), at("hard\xfd"));
  symlinkSync(bytes("target\xff"), at("link\xff"));
  const input = createInput("w1", { kind: "host-directory", path: plain });
  const created = await create({ ...t.options, hostDirectory: "clone" }, input);
  expect(created.stderr).toBe("");
  const root: string = ok(created).placement.cwd;
  const names = (dir: Buffer) => readdirSync(dir, { encoding: "buffer" }).map((name) => name.toString("latin1")).sort();
  const copied = (...parts: string[]) => Buffer.concat([bytes(`${root}/`), bytes(parts.join("/"))]);
  expect(names(bytes(root))).toEqual(names(bytes(plain)));
  expect(names(copied("d\xff"))).toEqual(["f\xfe"]);
  expect(readFileSync(copied("d\xff", "f\xfe"), "utf8")).toBe("inner\n");
  expect(readFileSync(copied("hard\xfd"), "utf8")).toBe("lone byte\n");
  expect(statSync(copied("hard\xfd")).ino).toBe(statSync(copied("a\xc3")).ino);
  expect(readlinkSync(copied("link\xff"), { encoding: "buffer" })).toEqual(bytes("target\xff"));
  ok(await op("destroy", "w1", { options: t.options }));
  expect(ownedEntries(t.home)).toEqual([]);
});

test("a workload that swaps its worktree's storage directory for a symlink to a victim: destroy follows nothing, touches nothing of the victim, and finishes", async () => {
  const repo = makeRepo(join(t.dir, "repo"));
  const victim = join(t.dir, "victim");
  mkdirSync(join(victim, "w1-60c5590f"), { recursive: true });
  writeFileSync(join(victim, "w1-60c5590f", "precious.txt"), "keep\n");
  const input = createInput("w1", { kind: "host-directory", path: repo }, { kind: "branch", branchName: "topic-w1", baseRef: "main" });
  const root: string = ok(await create(t.options, input)).placement.cwd;
  const storage = dirname(root);
  // The workload (the daemon's user, unsandboxed) moves its storage away and leaves a symlink to the victim.
  const handle = startExec("w1", envelope(["/bin/sh", "-c", 'mv "$S" "$S.moved" && ln -s "$V" "$S"'], { options: t.options, env: { PATH, S: storage, V: victim } }));
  handle.closeStdin();
  expect((await handle.done).code).toBe(0);

  const destroyed = await op("destroy", "w1", { options: t.options });
  expect(readFileSync(join(victim, "w1-60c5590f", "precious.txt"), "utf8")).toBe("keep\n");
  expect(destroyed.stderr).toContain("removing only our registration and the directory entry, following no symlink");
  expect(destroyed.stderr).not.toContain("not fully destroyed");
  expect(destroyed.code).toBe(0);
  expect(existsSync(storage)).toBe(false);
  expect(ok(await op("inspect", "w1", { options: t.options })).inspection).toEqual({ status: "missing" });
  expect(git(repo, "worktree", "list")).not.toContain(root);
});

test("a reconcile that runs while a create is still cloning leaves it alone; the create finishes ready", async () => {
  const repo = makeRepo(join(t.dir, "repo"));
  const url = makeRemote(repo, join(t.dir, "origin.git"));
  const bin = join(t.dir, "bin");
  mkdirSync(bin);
  // A clone that waits until the test opens its gate: the reconcile surely runs while it clones.
  const gate = join(t.dir, "gate");
  writeFileSync(join(bin, "git"), `#!/bin/sh\n[ "$1" = clone ] && while [ ! -e ${gate} ]; do sleep 0.02; done\nexec ${Bun.which("git")} "$@"\n`);
  chmodSync(join(bin, "git"), 0o755);
  const input = createInput("w1", { kind: "git", url, revision: "" });
  const creating = op("create", "w1", { input, options: t.options }, { PATH: `${bin}:${process.env.PATH}` });
  try {
    await until("the create is cloning", () => existsSync(join(t.home, "workspaces")) && record(t.home, "w1")?.status === "creating");
    const reconciled = await op("reconcile", null, { workspaceIds: [], options: t.options });
    expect(reconciled.stderr).toBe("");
    ok(reconciled);
  } finally {
    writeFileSync(gate, "");
  }
  const root: string = ok(await creating).placement.cwd;
  expect(existsSync(join(root, "README.md"))).toBe(true);
  expect(ok(await op("inspect", "w1", { options: t.options })).inspection.status).toBe("ready");
});
