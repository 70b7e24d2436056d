/**
 * platform/remove-tree.ts: a recursive removal that never leaves its filesystem. Symlinks are
 * unlinked, never followed; FIFOs never opened; `chmod 000` directories emptied; a mount point
 * (a bind mount of the same filesystem, a tmpfs, a bind-mounted file, the tree's own root) is
 * left exactly as it is and reported.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isLinux } from "../../src/platform/os.ts";
import { removeTree } from "../../src/platform/remove-tree.ts";
import { tempDir, type Scratch } from "../../kit/scratch.ts";
import { skipBecause } from "../support/platform.ts";

const ROOT = process.getuid?.() === 0;
const NO_MOUNTS = !isLinux ? "mounts are a Linux test" : !ROOT ? "mounting needs root" : null;
/** As root, permissions never stop a removal: the chmod case runs as nobody (setpriv). */
const NO_UNPRIVILEGED = ROOT && !Bun.which("setpriv") ? "setpriv (util-linux) is missing to run as an unprivileged user" : null;

/** Deep trees are made through /proc/self/fd (their paths pass PATH_MAX). */
const NO_PROC_FD = isLinux ? null : "making a tree deeper than PATH_MAX needs /proc/self/fd";

/** Makes `depth` nested directories named `d` in `top`; returns the innermost one's path (may pass PATH_MAX). */
function nest(top: string, depth: number): string {
  let fd = openSync(top, constants.O_RDONLY | constants.O_DIRECTORY);
  for (let i = 0; i < depth; i++) {
    mkdirSync(`/proc/self/fd/${fd}/d`);
    const next = openSync(`/proc/self/fd/${fd}/d`, constants.O_RDONLY | constants.O_DIRECTORY);
    closeSync(fd);
    fd = next;
  }
  closeSync(fd);
  return join(top, ...Array<string>(depth).fill("d"));
}

let dir: Scratch;
let mounts: string[] = [];
beforeEach(() => {
  dir = tempDir("phr-rmtree-");
});
afterEach(() => {
  for (const path of mounts.reverse()) Bun.spawnSync(["umount", "-l", path]);
  mounts = [];
  dir.cleanup();
});

function mount(args: string[], at: string): void {
  expect(Bun.spawnSync(["mount", ...args, at]).exitCode).toBe(0);
  mounts.push(at);
}

test("a tree of directories, files, symlinks and a FIFO goes; what the symlinks point to stays", () => {
  const outside = join(dir.path, "outside");
  mkdirSync(outside);
  writeFileSync(join(outside, "keep.txt"), "keep\n");
  const tree = join(dir.path, "tree");
  mkdirSync(join(tree, "a", "b"), { recursive: true });
  writeFileSync(join(tree, "a", "b", "file"), "x");
  symlinkSync(outside, join(tree, "to-outside"));
  symlinkSync(join(outside, "keep.txt"), join(tree, "a", "to-file"));
  symlinkSync("/nonexistent", join(tree, "dangling"));
  expect(Bun.spawnSync(["mkfifo", join(tree, "a", "fifo")]).exitCode).toBe(0);
  expect(removeTree(tree)).toEqual({ mountPoints: [], failures: [] });
  expect(existsSync(tree)).toBe(false);
  expect(readFileSync(join(outside, "keep.txt"), "utf8")).toBe("keep\n");
  // A path that is not there is removed already.
  expect(removeTree(tree)).toEqual({ mountPoints: [], failures: [] });
});

test.skipIf(skipBecause("platform/remove-tree.test.ts, the chmod 000 removal", NO_UNPRIVILEGED))("directories left chmod 000 and 0500 are emptied and removed by their owner", () => {
  // The user's own directory, holding the tree.
  const own = join(dir.path, "own");
  const tree = join(own, "tree");
  mkdirSync(join(tree, "closed", "deep"), { recursive: true });
  mkdirSync(join(tree, "readonly"));
  writeFileSync(join(tree, "closed", "deep", "f"), "x");
  writeFileSync(join(tree, "readonly", "f"), "x");
  chmodSync(join(tree, "readonly"), 0o500);
  chmodSync(join(tree, "closed"), 0o000);
  const script = `import { removeTree } from ${JSON.stringify(join(import.meta.dir, "../../src/platform/remove-tree.ts"))}; console.log(JSON.stringify(removeTree(${JSON.stringify(tree)})));`;
  const argv = [process.execPath, "-e", script];
  if (ROOT) {
    chmodSync(dir.path, 0o755);
    Bun.spawnSync(["chown", "-R", "65534:65534", own]);
  }
  const result = Bun.spawnSync(ROOT ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ...argv] : argv, { stderr: "pipe" });
  expect(result.stderr.toString()).toBe("");
  expect(JSON.parse(result.stdout.toString())).toEqual({ mountPoints: [], failures: [] });
  expect(existsSync(tree)).toBe(false);
});

/** Deeper than a recursive walk's stack (~40 000 frames here) with PASEO_STRESS=1; deeper than its descriptors always. */
const DEPTH = process.env.PASEO_STRESS === "1" ? 50_000 : 5_000;

test.skipIf(skipBecause("platform/remove-tree.test.ts, the deep trees", NO_PROC_FD))(`a tree ${DEPTH} directories deep goes, by a process allowed 64 open descriptors`, () => {
  const tree = join(dir.path, "tree");
  mkdirSync(tree);
  nest(tree, DEPTH);
  const script = join(dir.path, "remove.ts");
  writeFileSync(script, `import { removeTree } from ${JSON.stringify(join(import.meta.dir, "../../src/platform/remove-tree.ts"))};\nconsole.log(JSON.stringify(removeTree(process.argv[2])));\n`);
  const run = Bun.spawnSync(["sh", "-c", 'ulimit -n 64 && exec "$0" "$@"', process.execPath, script, tree], { stdout: "pipe", stderr: "pipe" });
  expect(run.stderr.toString()).toBe("");
  expect(JSON.parse(run.stdout.toString())).toEqual({ mountPoints: [], failures: [] });
  expect(existsSync(tree)).toBe(false);
}, 60_000);

describe.skipIf(skipBecause("platform/remove-tree.test.ts, the mount point removals", NO_MOUNTS))("mount points", () => {
  test("a mount point 100 levels down is left with the directories holding it, named by its path", () => {
    const tree = join(dir.path, "tree");
    mkdirSync(tree);
    const deep = nest(tree, 100);
    mkdirSync(join(deep, "mnt"));
    writeFileSync(join(deep, "file"), "x");
    const host = join(dir.path, "host");
    mkdirSync(host);
    writeFileSync(join(host, "precious"), "mine\n");
    mount(["--bind", host], join(deep, "mnt"));
    mkdirSync(join(tree, "d", "sibling"));
    expect(removeTree(tree)).toEqual({ mountPoints: [join(deep, "mnt")], failures: [] });
    expect(readdirSync(host)).toEqual(["precious"]);
    expect(readdirSync(deep)).toEqual(["mnt"]);
    expect(readdirSync(join(tree, "d"))).toEqual(["d"]);
  });

  test("a bind mount of the same filesystem, a tmpfs and a bind-mounted file are left with all they hold; everything else goes", () => {
    const host = join(dir.path, "host");
    mkdirSync(host);
    writeFileSync(join(host, "precious"), "mine\n");
    writeFileSync(join(dir.path, "host-file"), "file\n");
    const tree = join(dir.path, "tree");
    mkdirSync(join(tree, "sub", "bind"), { recursive: true });
    mkdirSync(join(tree, "tmp"));
    writeFileSync(join(tree, "sub", "other"), "x");
    writeFileSync(join(tree, "file-mount"), "");
    mount(["--bind", host], join(tree, "sub", "bind"));
    mount(["-t", "tmpfs", "tmpfs"], join(tree, "tmp"));
    writeFileSync(join(tree, "tmp", "inside"), "tmpfs\n");
    mount(["--bind", join(dir.path, "host-file")], join(tree, "file-mount"));

    const left = removeTree(tree);
    expect(left.failures).toEqual([]);
    expect(left.mountPoints.sort()).toEqual([join(tree, "file-mount"), join(tree, "sub", "bind"), join(tree, "tmp")]);
    expect(readdirSync(host)).toEqual(["precious"]);
    expect(readFileSync(join(host, "precious"), "utf8")).toBe("mine\n");
    expect(readFileSync(join(tree, "tmp", "inside"), "utf8")).toBe("tmpfs\n");
    expect(readFileSync(join(dir.path, "host-file"), "utf8")).toBe("file\n");
    // Only the mount points and the directories holding them are left.
    expect(readdirSync(tree).sort()).toEqual(["file-mount", "sub", "tmp"]);
    expect(readdirSync(join(tree, "sub"))).toEqual(["bind"]);
  });

  test("a tree that is itself a mount point is not emptied", () => {
    const host = join(dir.path, "host");
    mkdirSync(host);
    writeFileSync(join(host, "precious"), "mine\n");
    const tree = join(dir.path, "tree");
    mkdirSync(tree);
    mount(["--bind", host], tree);
    expect(removeTree(tree)).toEqual({ mountPoints: [tree], failures: [] });
    expect(readdirSync(host)).toEqual(["precious"]);
  });
});
