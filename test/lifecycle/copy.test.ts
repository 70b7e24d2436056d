/**
 * `hostDirectory: "clone"` of a plain directory (not a git repository) is a careful copy:
 * sparse files stay sparse, setuid/setgid bits are dropped, hard links stay hard links, and
 * FIFOs, sockets and device nodes are skipped and reported, without ever hanging.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, closeSync, ftruncateSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, readSync, statSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { create, createInput, ok } from "../support/operation.ts";
import { lab, type Lab } from "../../kit/scratch.ts";

const GiB = 1024 * 1024 * 1024;

let t: Lab;
let source: string;
beforeEach(() => {
  t = lab("phr-copy-");
  source = join(t.dir, "plain");
  mkdirSync(source);
});
afterEach(() => t.cleanup());

/** Copies `source` through the compiled binary's create; returns the copy's root and the create's stderr. */
async function copyOf(): Promise<{ root: string; stderr: string }> {
  const result = await create({ ...t.options, hostDirectory: "clone" }, createInput("w1", { kind: "host-directory", path: source }));
  const json = ok(result);
  return { root: json.placement.cwd, stderr: result.stderr };
}

/** A sparse file of `size` bytes with `chunks` written at the given offsets. */
function sparseFile(path: string, size: number, chunks: [number, string][]): void {
  const fd = openSync(path, "w");
  try {
    ftruncateSync(fd, size);
    for (const [offset, text] of chunks) writeSync(fd, text, offset);
  } finally {
    closeSync(fd);
  }
}

function readAt(path: string, offset: number, length: number): string {
  const fd = openSync(path, "r");
  try {
    const buffer = Buffer.alloc(length);
    return buffer.subarray(0, readSync(fd, buffer, 0, length, offset)).toString();
  } finally {
    closeSync(fd);
  }
}

function sh(script: string): void {
  const result = Bun.spawnSync(["/bin/sh", "-c", script], { stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`${script}: ${result.stderr.toString()}`);
}

describe("sparse files", () => {
  test("a 2 GiB sparse file copies to the same number of blocks and the same bytes", async () => {
    const chunks: [number, string][] = [
      [0, "head"],
      [GiB, "middle"],
      [2 * GiB - 4, "tail"],
    ];
    sparseFile(join(source, "disk.img"), 2 * GiB, chunks);
    const original = statSync(join(source, "disk.img"));
    expect(original.blocks * 512).toBeLessThan(1024 * 1024);
    const { root } = await copyOf();
    const copy = statSync(join(root, "disk.img"));
    expect(copy.size).toBe(2 * GiB);
    expect(copy.blocks).toBe(original.blocks);
    for (const [offset, text] of chunks) expect(readAt(join(root, "disk.img"), offset, text.length)).toBe(text);
  });

  test("a file of several data runs and holes, and one ending in a hole, copy byte for byte with their holes", async () => {
    const MiB = 1024 * 1024;
    sparseFile(join(source, "runs.bin"), 12 * MiB, [
      [0, "a".repeat(70_000)],
      [3 * MiB, "b".repeat(5000)],
      [7 * MiB + 123, "c".repeat(300_000)],
    ]);
    writeFileSync(join(source, "dense.txt"), "dense\n".repeat(10_000));
    const { root } = await copyOf();
    for (const name of ["runs.bin", "dense.txt"]) {
      expect(readFileSync(join(root, name)).equals(readFileSync(join(source, name)))).toBe(true);
      expect(statSync(join(root, name)).blocks).toBe(statSync(join(source, name)).blocks);
    }
  });
});

describe("modes, links and special files", () => {
  test("setuid and setgid bits are dropped from files and directories; other bits stay", async () => {
    writeFileSync(join(source, "suid"), "#!/bin/sh\n");
    chmodSync(join(source, "suid"), 0o4755);
    writeFileSync(join(source, "sgid"), "x");
    chmodSync(join(source, "sgid"), 0o2750);
    mkdirSync(join(source, "shared"));
    chmodSync(join(source, "shared"), 0o2775);
    writeFileSync(join(source, "plain"), "x");
    chmodSync(join(source, "plain"), 0o640);
    const { root } = await copyOf();
    expect(statSync(join(root, "suid")).mode & 0o7777).toBe(0o755);
    expect(statSync(join(root, "sgid")).mode & 0o7777).toBe(0o750);
    expect(statSync(join(root, "shared")).mode & 0o7777).toBe(0o775);
    expect(statSync(join(root, "plain")).mode & 0o7777).toBe(0o640);
  });

  test("hard links inside the tree stay hard links; a file also linked from outside is copied", async () => {
    mkdirSync(join(source, "sub"));
    writeFileSync(join(source, "a"), "linked\n");
    linkSync(join(source, "a"), join(source, "sub", "b"));
    writeFileSync(join(source, "c"), "shared with outside\n");
    linkSync(join(source, "c"), join(t.dir, "outside-link"));
    const { root } = await copyOf();
    const a = statSync(join(root, "a"));
    const b = statSync(join(root, "sub", "b"));
    expect(b.ino).toBe(a.ino);
    expect(a.nlink).toBe(2);
    expect(readFileSync(join(root, "sub", "b"), "utf8")).toBe("linked\n");
    expect(a.ino).not.toBe(statSync(join(source, "a")).ino);
    expect(statSync(join(root, "c")).nlink).toBe(1);
    expect(readFileSync(join(root, "c"), "utf8")).toBe("shared with outside\n");
  });

  test("a FIFO, a socket and a device node are skipped and reported, and the FIFO does not hang the copy", async () => {
    mkdirSync(join(source, "dir"));
    sh(`mkfifo '${join(source, "dir", "pipe")}'`);
    const server = Bun.listen({ unix: join(source, "sock"), socket: { data() {} } });
    const isRoot = process.getuid?.() === 0;
    if (isRoot) sh(`mknod '${join(source, "null")}' c 1 3`);
    writeFileSync(join(source, "kept.txt"), "kept\n");
    symlinkSync("kept.txt", join(source, "link"));
    try {
      const { root, stderr } = await copyOf();
      expect(readFileSync(join(root, "kept.txt"), "utf8")).toBe("kept\n");
      expect(lstatSync(join(root, "link")).isSymbolicLink()).toBe(true);
      for (const name of ["dir/pipe", "sock", "null"]) expect(lstatSync(join(root, name), { throwIfNoEntry: false })).toBeUndefined();
      expect(stderr).toContain(`copy of ${source}: skipped ${isRoot ? 3 : 2} entries that cannot be copied`);
      expect(stderr).toContain("dir/pipe (FIFO)");
      expect(stderr).toContain("sock (socket)");
      if (isRoot) expect(stderr).toContain("null (character device)");
    } finally {
      server.stop(true);
    }
  }, 30_000);
});
