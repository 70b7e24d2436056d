/** Resolving beneath a directory descriptor without symlinks, and starting a child in exactly that directory. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { closeSync, ftruncateSync, lstatSync, mkdirSync, openSync, readFileSync, realpathSync, renameSync, statSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { closeDescriptor, identityOf, openBeneath, openBeneathByWalk, openDirectory, spawnDirectory } from "../../src/platform/directory.ts";
import { copyFileData } from "../../src/platform/file-data.ts";
import { tempDir } from "../../kit/scratch.ts";
import { kernelBefore, linuxOnly } from "../support/platform.ts";

let dir: { path: string; cleanup: () => void };
let base: number;
beforeEach(() => {
  dir = tempDir("phr-dirfd-");
  mkdirSync(join(dir.path, "a", "b"), { recursive: true });
  writeFileSync(join(dir.path, "a", "file"), "x");
  symlinkSync("a", join(dir.path, "inside-link"));
  symlinkSync("/etc", join(dir.path, "outside-link"));
  base = openDirectory(dir.path);
});
afterEach(() => {
  closeDescriptor(base);
  dir.cleanup();
});

function identity(path: string): string {
  const stat = lstatSync(path, { bigint: true });
  return `${stat.dev}:${stat.ino}`;
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    closeDescriptor(fn() as number);
    return undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code;
  }
}

/** A symlink met with O_NOFOLLOW | O_DIRECTORY is ENOTDIR on Linux (ELOOP on macOS); RESOLVE_NO_SYMLINKS on the way is ELOOP. */
const SYMLINK_CODES = ["ELOOP", "ENOTDIR"];

// openBeneath falls back to the walk where openat2 is missing: there its block would test the walk twice.
const NO_OPENAT2 = kernelBefore("platform/directory.test.ts, openBeneath through openat2", "5.6", "openat2");
for (const [name, open, skip] of [
  ["openat2 (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)", openBeneath, NO_OPENAT2],
  ["the O_NOFOLLOW walk (macOS, Linux before 5.6)", openBeneathByWalk, false],
] as const) {
  describe.skipIf(skip)(name, () => {
    test("opens the very directory, itself for \"\" and \".\"", () => {
      for (const [path, expected] of [
        ["a/b", "a/b"],
        ["a//b/", "a/b"],
        ["", "."],
        [".", "."],
      ]) {
        const fd = open(base, path!);
        expect(identityOf(fd)).toBe(identity(join(dir.path, expected!)));
        closeDescriptor(fd);
      }
    });

    test("refuses every symlink, even one that stays inside, at the end or on the way", () => {
      for (const path of ["inside-link", "inside-link/b", "outside-link"]) expect(SYMLINK_CODES).toContain(codeOf(() => open(base, path)) ?? "opened");
    });

    test("refuses .., files and missing paths", () => {
      expect(codeOf(() => open(base, "a/../.."))).toBe("EXDEV");
      expect(codeOf(() => open(base, ".."))).toBe("EXDEV");
      expect(codeOf(() => open(base, "a/file"))).toBe("ENOTDIR");
      expect(codeOf(() => open(base, "a/missing"))).toBe("ENOENT");
    });
  });
}

test.skipIf(linuxOnly("platform/directory.test.ts, the child's descriptors", "/proc/self/fd"))("a child spawned with spawnDirectory starts in the opened directory even after it was renamed and replaced by a symlink", () => {
  const fd = openBeneath(base, "a/b");
  renameSync(join(dir.path, "a"), join(dir.path, "moved"));
  symlinkSync("/etc", join(dir.path, "a"));
  const child = Bun.spawnSync(["/bin/sh", "-c", "/bin/pwd -P; ls /proc/self/fd"], { cwd: spawnDirectory(fd) });
  closeDescriptor(fd);
  const [cwd, ...fds] = child.stdout.toString().trim().split("\n");
  expect(cwd).toBe(join(realpathSync(dir.path), "moved", "b"));
  // 0, 1, 2 and the descriptor ls opened to list them: the directory descriptor never reaches the child.
  expect(fds.sort()).toEqual(["0", "1", "2", "3"]);
});

test("the pread/pwrite path (macOS) keeps holes and bytes too", () => {
  const from = join(dir.path, "sparse");
  const to = join(dir.path, "copy");
  const fd = openSync(from, "w");
  ftruncateSync(fd, 64 * 1024 * 1024);
  writeSync(fd, "start", 0);
  writeSync(fd, "middle".repeat(10_000), 40 * 1024 * 1024);
  closeSync(fd);
  const src = openSync(from, "r");
  const dst = openSync(to, "w");
  expect(copyFileData(src, dst, { inKernel: false })).toBe("extents");
  closeSync(src);
  closeSync(dst);
  expect(readFileSync(to).equals(readFileSync(from))).toBe(true);
  expect(statSync(to).blocks).toBe(statSync(from).blocks);
});
