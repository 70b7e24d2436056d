/**
 * Tolerated failures are named (src/platform/errno.ts): a call that may fail one expected way
 * answers its fallback for exactly that errno, and any other failure is thrown, never read as
 * "gone". And the libc calls whose result used to go unchecked say when they fail.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { cgroupPathOf } from "../../src/platform/cgroup.ts";
import { errnoOf, hasErrno, PROCESS_GONE, tolerating } from "../../src/platform/errno.ts";
import { openat } from "../../src/platform/libc/files.ts";
import { readProcess } from "../../src/platform/process.ts";
import { lstatOrNull, realPathOrNull, statOrNull } from "../../src/platform/lookup.ts";
import { utf8OrNull } from "../../src/protocol/utf8.ts";
import { tempDir } from "../../kit/scratch.ts";
import { linuxOnly } from "../support/platform.ts";

/** A pid above the kernel's pid_max: no process can have it. */
const NO_SUCH_PID = 4_194_304 + 1;

describe("tolerating", () => {
  test("answers the fallback for the errno it names", () => {
    expect(tolerating(["ENOENT"], null, () => readFileSync("/no/such/file"))).toBeNull();
  });

  test("throws any other failure unchanged", () => {
    expect(() => tolerating(["ENOENT"], null, () => readFileSync("/"))).toThrow(expect.objectContaining({ code: "EISDIR" }));
    const own = new Error("not a system call's failure");
    expect(() => tolerating(["ENOENT"], null, () => { throw own; })).toThrow(own);
  });

  test("passes a success through, whatever it is", () => {
    expect(tolerating(["ENOENT"], "fallback", () => 0)).toBe(0);
  });
});

describe("errnoOf and hasErrno", () => {
  const missing = (() => {
    try {
      readFileSync("/no/such/file");
    } catch (error) {
      return error;
    }
  })();

  test("name the errno of Node's failures and of the libc calls' alike", () => {
    expect(errnoOf(missing)).toBe("ENOENT");
    let libcFailure: unknown;
    try {
      openat(-1, "relative", 0);
    } catch (error) {
      libcFailure = error;
    }
    expect(errnoOf(libcFailure)).toBe("EBADF");
    expect(hasErrno(libcFailure, ["ENOENT", "EBADF"])).toBe(true);
  });

  test("anything that is not a system call's failure has no errno", () => {
    for (const other of [new Error("ENOENT"), Object.assign(new Error("x"), { code: 2 }), null, undefined, "ENOENT"]) {
      expect(errnoOf(other)).toBeUndefined();
      expect(hasErrno(other, ["ENOENT"])).toBe(false);
    }
    expect(hasErrno(missing, ["EEXIST"])).toBe(false);
  });
});

describe.skipIf(linuxOnly("platform/errno.test.ts, /proc reads", "/proc"))("/proc reads tolerate only a process that is gone", () => {
  test("a pid no process has is null, for its stat and its cgroup", () => {
    expect(PROCESS_GONE).toEqual(["ENOENT", "ESRCH"]);
    expect(readProcess(NO_SUCH_PID)).toBeNull();
    expect(cgroupPathOf(NO_SUCH_PID)).toBeNull();
  });

  test("a live process is read", () => {
    expect(readProcess(process.pid)).toMatchObject({ pid: process.pid, ppid: process.ppid });
  });

  test("a read that fails for another reason throws instead of calling a live process gone (EMFILE, in a child)", () => {
    const process_ts = join(import.meta.dir, "../../src/platform/process.ts");
    const script = `
      const { openSync } = require("fs");
      const { readProcess } = require(${JSON.stringify(process_ts)});
      const held = [];
      try { for (;;) held.push(openSync("/dev/null", "r")); } catch (e) { if (e.code !== "EMFILE") throw e; }
      let answer;
      try { answer = JSON.stringify(readProcess(process.pid)); } catch (e) { answer = "threw " + e.code; }
      process.stdout.write(answer);`;
    const child = Bun.spawnSync(["/bin/sh", "-c", 'ulimit -n 128 && exec "$0" -e "$1"', process.execPath, script]);
    expect(child.stderr.toString()).toBe("");
    expect(child.stdout.toString()).toBe("threw EMFILE");
  });
});

describe.skipIf(linuxOnly("platform/errno.test.ts, setrlimit through bun:ffi", "glibc's setrlimit and /proc/self/limits"))("setrlimit's result is checked", () => {
  test("disableCoreDumps succeeds and leaves the core size limit at 0 (run in a child, not this test process)", () => {
    const libc = join(import.meta.dir, "../../src/platform/libc/exit.ts");
    const child = Bun.spawnSync([process.execPath, "-e", `require(${JSON.stringify(libc)}).disableCoreDumps(); process.stdout.write(require("fs").readFileSync("/proc/self/limits", "utf8"))`]);
    expect(child.stderr.toString()).toBe("");
    expect(child.exitCode).toBe(0);
    expect(child.stdout.toString()).toMatch(/^Max core file size\s+0\s+0\s+bytes\s*$/m);
  });
});

describe("a path looked up when it may not be there (lookup.ts)", () => {
  test("missing, or a dangling symlink: null; a symlink loop is not \"missing\" and is thrown", () => {
    const dir = tempDir("phr-lookup-");
    try {
      symlinkSync("nowhere", join(dir.path, "dangling"));
      symlinkSync("loop", join(dir.path, "loop"));
      expect(realPathOrNull(join(dir.path, "absent"))).toBeNull();
      expect(realPathOrNull(join(dir.path, "dangling"))).toBeNull();
      expect(statOrNull(join(dir.path, "dangling"))).toBeNull();
      expect(lstatOrNull(join(dir.path, "dangling"))?.isSymbolicLink()).toBe(true);
      expect(lstatOrNull(join(dir.path, "absent", "below"))).toBeNull();
      expect(() => realPathOrNull(join(dir.path, "loop"))).toThrow(expect.objectContaining({ code: "ELOOP" }));
      expect(() => statOrNull(join(dir.path, "loop"))).toThrow(expect.objectContaining({ code: "ELOOP" }));
    } finally {
      dir.cleanup();
    }
  });
});

describe("bytes that are not UTF-8 (utf8OrNull)", () => {
  test("null for invalid UTF-8 only; a valid text, BOM kept, passes through", () => {
    expect(utf8OrNull(new Uint8Array([0x61, 0xff]))).toBeNull();
    expect(utf8OrNull(new Uint8Array([0xef, 0xbb, 0xbf, 0x61]))).toBe("\ufeffa");
  });
});
