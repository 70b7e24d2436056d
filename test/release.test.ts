/**
 * `npm run release`: archive names, reproducible archives, format checks, the smoke test, and
 * the release of this machine's own target built twice and compared byte for byte. Building all
 * seven targets belongs to `npm run release`; here one native target (twice) and one cross target.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Entry, gzip, sha256, tar, writeArchive } from "../release/archive.ts";
import { codePageHashProblem, formatMismatch, readBinaryFormat } from "../release/binary-format.ts";
import { ROOT } from "../release/compile.ts";
import { NOTICE, UsageError, buildRelease, parseReleaseArgs, type ReleaseResult } from "../release/release.ts";
import { expectedMembers, runnerFor, smokeTest } from "../release/smoke.ts";
import { HELPER_NAME, RUNTIME_NAME, TARGETS, archiveName, archiveStem, findTarget, type Target } from "../release/targets.ts";

let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), "phr-release-"));
});
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function target(name: string): Target {
  const t = findTarget(name);
  if (!t) throw new Error(`no target ${name}`);
  return t;
}

function run(argv: string[], cwd = scratch): { code: number | null; stdout: string; stderr: string } {
  const proc = Bun.spawnSync(argv, { cwd, stdin: "ignore" });
  return { code: proc.exitCode, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

describe("names", () => {
  test("the seven targets are named the way install.sh asks for them", () => {
    expect(TARGETS.map((t) => t.bun)).toEqual([
      "bun-linux-x64",
      "bun-linux-x64-baseline",
      "bun-linux-arm64",
      "bun-linux-x64-musl",
      "bun-linux-arm64-musl",
      "bun-darwin-x64",
      "bun-darwin-arm64",
    ]);
    expect(TARGETS.map((t) => archiveName("1.2.3", t))).toEqual([
      "paseo-host-runtime-1.2.3-linux-x64.tar.gz",
      "paseo-host-runtime-1.2.3-linux-x64-baseline.tar.gz",
      "paseo-host-runtime-1.2.3-linux-arm64.tar.gz",
      "paseo-host-runtime-1.2.3-linux-x64-musl.tar.gz",
      "paseo-host-runtime-1.2.3-linux-arm64-musl.tar.gz",
      "paseo-host-runtime-1.2.3-darwin-x64.tar.gz",
      "paseo-host-runtime-1.2.3-darwin-arm64.tar.gz",
    ]);
    // Every platform install.sh accepts has a target, and no other.
    const accepted = readFileSync(join(ROOT, "install.sh"), "utf8").match(/^ {4}(linux-x64\|[^)]*)\) ;;$/m)?.[1]?.split("|");
    expect(accepted?.sort()).toEqual(TARGETS.map((t) => t.platform).sort());
  });
});

describe("archives", () => {
  const entries: Entry[] = [
    { path: "pkg", mode: 0o755 },
    { path: "pkg/run", mode: 0o755, data: Buffer.from("#!/bin/sh\necho hi\n") },
    { path: "pkg/empty", mode: 0o644, data: new Uint8Array(0) },
    { path: "pkg/block", mode: 0o644, data: new Uint8Array(512).fill(7) },
    { path: "pkg/big", mode: 0o600, data: new Uint8Array(70_001).map((_, i) => i % 251) },
  ];

  test("the system tar reads back exact names, contents, modes, owner 0:0 and the fixed mtime", () => {
    const file = join(scratch, "t.tar.gz");
    writeArchive(file, entries, 1_700_000_000);
    const listing = run(["tar", "--numeric-owner", "--full-time", "-tvzf", file]);
    expect(listing.code).toBe(0);
    const lines = listing.stdout.trim().split("\n").map((l) => l.split(/\s+/));
    expect(lines.map((l) => l[5])).toEqual(["pkg/", "pkg/run", "pkg/empty", "pkg/block", "pkg/big"]);
    expect(lines.map((l) => l[0])).toEqual(["drwxr-xr-x", "-rwxr-xr-x", "-rw-r--r--", "-rw-r--r--", "-rw-------"]);
    expect(new Set(lines.map((l) => l[1]))).toEqual(new Set(["0/0"]));
    const out = join(scratch, "untar");
    mkdirSync(out);
    expect(run(["tar", "-xzf", file, "-C", out]).code).toBe(0);
    for (const e of entries.filter((e) => e.data)) {
      expect(new Uint8Array(readFileSync(join(out, e.path)))).toEqual(new Uint8Array(e.data!));
      expect(statSync(join(out, e.path)).mode & 0o777).toBe(e.mode);
      expect(statSync(join(out, e.path)).mtimeMs).toBe(1_700_000_000_000);
    }
  });

  test("the same entries give the same bytes; the gzip header has mtime 0 and OS Unix", () => {
    const a = gzip(tar(entries, 1_700_000_000));
    const b = gzip(tar(entries.map((e) => ({ ...e })), 1_700_000_000));
    expect(sha256(a)).toBe(sha256(b));
    expect([...a.subarray(0, 10)]).toEqual([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3]);
    expect(sha256(gzip(tar(entries, 1_700_000_001)))).not.toBe(sha256(a));
  });

  test("a path over 100 bytes is refused rather than truncated", () => {
    expect(() => tar([{ path: "x".repeat(101), mode: 0o644, data: new Uint8Array(1) }], 0)).toThrow("longer than 100 bytes");
  });
});

/** A minimal 64-bit Mach-O executable of `pages` pages, signed the way ad-hoc signatures are (or not). */
function machO(cpu: number, pages: number, signed = true): Buffer {
  const codeLimit = pages * 4096;
  const file = Buffer.alloc(codeLimit);
  file.writeUInt32LE(0xfeedfacf, 0);
  file.writeInt32LE(cpu, 4);
  file.writeUInt32LE(2, 12); // MH_EXECUTE
  for (let i = 64; i < codeLimit; i++) file[i] = (i * 31) % 256;
  if (!signed) return file;

  const ident = Buffer.from("paseo-host-runtime\0");
  const hashOffset = 44 + ident.length;
  const cd = Buffer.alloc(hashOffset + pages * 32);
  file.writeUInt32LE(1, 16); // one load command, 16 bytes: LC_CODE_SIGNATURE at the code limit
  file.writeUInt32LE(16, 20);
  file.writeUInt32LE(0x1d, 32);
  file.writeUInt32LE(16, 36);
  file.writeUInt32LE(codeLimit, 40);
  file.writeUInt32LE(20 + cd.length, 44);
  cd.writeUInt32BE(0xfade0c02, 0); // CodeDirectory
  cd.writeUInt32BE(cd.length, 4);
  cd.writeUInt32BE(0x20100, 8);
  cd.writeUInt32BE(2, 12); // adhoc
  cd.writeUInt32BE(hashOffset, 16);
  cd.writeUInt32BE(44, 20);
  cd.writeUInt32BE(pages, 28);
  cd.writeUInt32BE(codeLimit, 32);
  cd[36] = 32;
  cd[37] = 2; // SHA-256
  cd[39] = 12; // 4096-byte pages
  ident.copy(cd, 44);
  for (let p = 0; p < pages; p++) createHash("sha256").update(file.subarray(p * 4096, (p + 1) * 4096)).digest().copy(cd, hashOffset + p * 32);
  const superBlob = Buffer.alloc(20);
  superBlob.writeUInt32BE(0xfade0cc0, 0); // embedded signature holding the one CodeDirectory
  superBlob.writeUInt32BE(20 + cd.length, 4);
  superBlob.writeUInt32BE(1, 8);
  superBlob.writeUInt32BE(0, 12);
  superBlob.writeUInt32BE(20, 16);
  return Buffer.concat([file, superBlob, cd]);
}

describe("formats", () => {
  test("ELF headers give the CPU and the libc loader; x64 and arm64 cannot be confused", () => {
    const f = readBinaryFormat("/bin/true");
    expect(f.format).toBe("ELF");
    expect(f.arch).toBe(process.arch === "arm64" ? "arm64" : "x64");
    expect(formatMismatch(f, target(process.arch === "arm64" ? "linux-x64" : "linux-arm64"))).toMatch(/^expected (arm64|x64), found/);
    expect(formatMismatch(f, target("darwin-arm64"))).toBe("expected Mach-O, found ELF");
  });

  test("Mach-O headers give the CPU; a signature whose page hashes match passes, one changed byte fails", () => {
    const file = join(scratch, "macho");
    writeFileSync(file, machO(0x0100000c, 3));
    const f = readBinaryFormat(file);
    expect(f).toMatchObject({ format: "Mach-O", arch: "arm64", libc: "darwin" });
    expect(formatMismatch(f, target("darwin-arm64"))).toBeUndefined();
    expect(formatMismatch(f, target("darwin-x64"))).toBe("expected x64, found arm64");
    expect(codePageHashProblem(file)).toBeUndefined();
    // What Bun 1.4.4 does to darwin-x64: bytes change under the original signature.
    const broken = machO(0x01000007, 3);
    broken[5000] = broken[5000]! ^ 1;
    writeFileSync(file, broken);
    expect(readBinaryFormat(file).arch).toBe("x64");
    expect(codePageHashProblem(file)).toBe("page 1 of 3 does not match its sha256 hash");
  });
});

describe("smoke test", () => {
  /** A --no-helper archive for `forTarget` holding `binary` (default /bin/true) as the runtime. */
  const pack = (forTarget: Target, withReadme: boolean, binary: Uint8Array = readFileSync("/bin/true")) => {
    const stem = archiveStem("0.0.1", forTarget);
    const file = join(scratch, archiveName("0.0.1", forTarget));
    writeArchive(file, [
      { path: stem, mode: 0o755 },
      { path: `${stem}/${RUNTIME_NAME}`, mode: 0o755, data: binary },
      { path: `${stem}/NOTICE`, mode: 0o644, data: Buffer.from(NOTICE) },
      { path: `${stem}/LICENSE`, mode: 0o644, data: Buffer.from("MIT\n") },
      ...(withReadme ? [{ path: `${stem}/README.md`, mode: 0o644, data: Buffer.from("#\n") }] : []),
    ], 0);
    return file;
  };

  test("where each target can run: natively, under qemu, under Rosetta, or not at all", () => {
    const elf = (arch: "x64" | "arm64", libc: "glibc" | "musl") => ({ format: "ELF" as const, arch, libc, interpreter: `/nonexistent/ld-${libc}-${arch}` });
    const linuxX64 = { os: "linux", arch: "x64", libc: "glibc" as const };
    expect(runnerFor(target("linux-x64-baseline"), elf("x64", "glibc"), linuxX64)).toEqual({ prefix: [], label: "native" });
    expect(runnerFor(target("linux-x64-musl"), elf("x64", "musl"), linuxX64)).toEqual({
      notRun: "no /nonexistent/ld-musl-x64 on this host (a musl system runs it)",
    });
    expect(runnerFor(target("darwin-arm64"), { format: "Mach-O", arch: "arm64", libc: "darwin" }, linuxX64)).toEqual({
      notRun: "a darwin binary does not run on linux",
    });
    const macArm = { os: "darwin", arch: "arm64" };
    expect(runnerFor(target("darwin-x64"), { format: "Mach-O", arch: "x64", libc: "darwin" }, macArm)).toEqual({ prefix: [], label: "Rosetta 2" });
    const arm = runnerFor(target("linux-arm64"), elf("arm64", "glibc"), linuxX64);
    if (Bun.which("qemu-aarch64") || Bun.which("qemu-aarch64-static")) expect(JSON.stringify(arm)).toContain("qemu");
    else expect(arm).toEqual({ notRun: "qemu-aarch64 is not installed (apt-get install qemu-user)" });
  });

  test("it reports a wrong member list, a wrong CPU and a binary that is not ours", () => {
    // /bin/true stands in for the runtime: an ELF of the right CPU that is not paseo-host-runtime.
    const t = target(process.arch === "arm64" ? "linux-arm64" : "linux-x64");
    const other = target(process.arch === "arm64" ? "linux-x64" : "linux-arm64");
    const wrongCpu = smokeTest(pack(other, true), other, "0.0.1", false);
    expect(wrongCpu.problems).toEqual([expect.stringMatching(/^wrong format: expected (arm64|x64), found (x64|arm64)$/)]);
    const notOurs = smokeTest(pack(t, false), t, "0.0.1", false);
    expect(notOurs.ranWith).toBe("native");
    expect(notOurs.problems).toEqual([
      `holds [LICENSE, NOTICE, ${RUNTIME_NAME}], expected [${expectedMembers(false).join(", ")}]`,
      expect.stringMatching(/^--version exited 0 with ".*", expected "paseo-host-runtime 0\.0\.1 \(linux-(x64|arm64), …"$/),
      expect.stringMatching(/^describe exited 0 with ""$/),
    ]);
  });

  test("it reports a macOS binary whose signature no longer matches, and an unsigned arm64 one", () => {
    const x64 = target("darwin-x64");
    const broken = machO(0x01000007, 2);
    broken[100] = broken[100]! ^ 1;
    const brokenResult = smokeTest(pack(x64, true, broken), x64, "0.0.1", false);
    expect(brokenResult.format).toBe("Mach-O x64 (signed), page hashes DO NOT match");
    expect(brokenResult.problems).toEqual([
      "code signature broken (page 0 of 2 does not match its sha256 hash): re-sign on macOS with codesign --force --sign -",
    ]);
    const arm = target("darwin-arm64");
    expect(smokeTest(pack(arm, true, machO(0x0100000c, 2)), arm, "0.0.1", false).problems).toEqual([]);
    expect(smokeTest(pack(arm, true, machO(0x0100000c, 2, false)), arm, "0.0.1", false).problems).toEqual([
      "unsigned: macOS on arm64 runs only signed code",
    ]);
  });
});

describe("release", () => {
  const helperScript = () => {
    const file = join(scratch, "helper");
    writeFileSync(file, "#!/bin/sh\necho helper\n");
    return file;
  };
  const readme = () => {
    const file = join(scratch, "README.md");
    writeFileSync(file, "# paseo-host-runtime (test readme)\n");
    return file;
  };
  const host = TARGETS.find((t) => t.os === process.platform && t.arch === process.arch && !t.baseline && t.libc === readBinaryFormat(process.execPath).libc);

  /** A hash of everything `bun build` reads from this repository. */
  const sourceFingerprint = () => {
    const hash = createHash("sha256");
    const walk = (path: string) => {
      if (statSync(path).isDirectory()) for (const name of readdirSync(path).sort()) walk(join(path, name));
      else hash.update(path).update(readFileSync(path));
    };
    for (const path of ["src", "package.json", "package-lock.json", "tsconfig.json"]) walk(join(ROOT, path));
    return hash.digest("hex");
  };

  test("this machine's target, released twice, is byte-identical and passes its smoke test", async () => {
    if (!host) throw new Error(`no release target for ${process.platform}-${process.arch}`);
    let results: ReleaseResult[] = [];
    // Other work in this tree may edit src/ between the two builds; then the comparison says
    // nothing, so build both again (the bytes must match whenever the sources did not change).
    for (let attempt = 1; attempt <= 3; attempt++) {
      const before = sourceFingerprint();
      results = [];
      for (const out of ["one", "two"]) {
        results.push(await buildRelease({
          version: "1.2.3",
          helper: helperScript(),
          out: join(scratch, out),
          targets: [host],
          readme: readme(),
          mtime: 1_700_000_000,
          log: () => {},
        }));
      }
      if (sourceFingerprint() === before) break;
      if (attempt === 3) throw new Error("src/ kept changing during three attempts: cannot compare builds");
    }
    const [one, two] = results as [ReleaseResult, ReleaseResult];
    expect(one.sums).toBe(two.sums);
    expect(one.sums.split("\n").filter(Boolean).map((l) => l.split("  ")[1])).toEqual(["install.sh", archiveName("1.2.3", host)]);
    expect(readdirSync(join(scratch, "one")).sort()).toEqual([archiveName("1.2.3", host), "SHA256SUMS", "install.sh", "smoke-report.md"].sort());
    expect(run(["sha256sum", "-c", "SHA256SUMS"], join(scratch, "one")).code).toBe(0);
    const [smoke] = one.smoke;
    expect(smoke?.problems).toEqual([]);
    expect(smoke?.ranWith).toBe("native");
    expect(smoke?.versionLine).toStartWith(`${RUNTIME_NAME} 1.2.3 (${host.os}-${host.arch}, bun `);
    expect(one.ok).toBe(true);
    expect(one.report).toContain(`| ${host.bun} |`);
  }, 360_000);

  test("a --no-helper release for linux-arm64 holds a NOTICE and an arm64 ELF, run under qemu when it can", async () => {
    const t = target("linux-arm64");
    const result = await buildRelease({
      version: "1.2.3-rc.1",
      helper: null,
      out: join(scratch, "arm"),
      targets: [t],
      readme: readme(),
      mtime: 1_700_000_000,
      log: () => {},
    });
    const list = run(["tar", "-tzf", result.archives[0]!]).stdout.trim().split("\n");
    const stem = archiveStem("1.2.3-rc.1", t);
    expect(list).toEqual([`${stem}/`, `${stem}/${RUNTIME_NAME}`, `${stem}/NOTICE`, `${stem}/LICENSE`, `${stem}/README.md`]);
    expect(list).not.toContain(`${stem}/${HELPER_NAME}`);
    const [smoke] = result.smoke;
    expect(smoke?.format).toBe("ELF arm64 (glibc, /lib/ld-linux-aarch64.so.1)");
    expect(smoke?.problems).toEqual([]);
    if (smoke?.ranWith) expect(smoke.versionLine).toStartWith(`${RUNTIME_NAME} 1.2.3-rc.1 (linux-arm64, bun `);
    else console.warn(`linux-arm64 not executed: ${smoke?.notRun}`);
    expect(result.report).toContain("Built with --no-helper");
  }, 180_000);
});

describe("command line", () => {
  const parse = (...argv: string[]) => parseReleaseArgs(argv);
  const refusal = (...argv: string[]) => {
    try {
      parseReleaseArgs(argv);
    } catch (error) {
      if (error instanceof UsageError) return error.message;
      throw error;
    }
    throw new Error(`accepted: ${argv.join(" ")}`);
  };

  test("it needs a version and a decision about the helper", () => {
    expect(refusal("--no-helper")).toBe("--version is required");
    expect(refusal("--version", "1.2", "--no-helper")).toBe('--version must look like 1.2.3 or 1.2.3-rc.1, got "1.2"');
    expect(refusal("--version", "1.2.3")).toContain("--helper PATH is required");
    expect(refusal("--version", "1.2.3", "--helper", "h", "--no-helper")).toBe("give either --helper PATH or --no-helper, not both");
    expect(refusal("--version", "1.2.3", "--no-helper", "--targets", "windows-x64")).toStartWith('unknown target "windows-x64"');
    expect(refusal("--version", "1.2.3", "--no-helper", "--frob")).toBe('unknown argument "--frob"');
    expect(refusal("--sums", "d", "--no-helper")).toBe("--sums takes no other option");
  });

  test("targets are picked by Bun name, platform or OS, in release order", () => {
    const build = (...argv: string[]) => {
      const c = parse("--version", "v1.2.3", "--no-helper", ...argv);
      if (c.kind !== "build") throw new Error("not a build");
      return c.options;
    };
    expect(build().version).toBe("1.2.3");
    expect(build().targets).toEqual(TARGETS);
    expect(build().helper).toBeNull();
    expect(build("--targets", "darwin-arm64,bun-linux-x64").targets.map((t) => t.bun)).toEqual(["bun-linux-x64", "bun-darwin-arm64"]);
    expect(build("--targets=linux").targets.map((t) => t.platform)).toEqual(["linux-x64", "linux-x64-baseline", "linux-arm64", "linux-x64-musl", "linux-arm64-musl"]);
    expect(build("--out", "x").out).toBe(join(process.cwd(), "x"));
  });

  test("npm run release without a helper decision exits 2 before building anything", () => {
    const out = join(scratch, "never");
    const result = run([process.execPath, join(ROOT, "release/release.ts"), "--version", "1.2.3", "--out", out]);
    expect(result.code).toBe(2);
    expect(result.stderr).toStartWith(`release: --helper PATH is required: every archive ships ${HELPER_NAME} beside ${RUNTIME_NAME}`);
    expect(existsSync(out)).toBe(false);
  });

  test("--sums DIR writes SHA256SUMS that sha256sum -c accepts", () => {
    const dir = join(scratch, "sums");
    mkdirSync(dir);
    writeFileSync(join(dir, "b.tar.gz"), "b");
    writeFileSync(join(dir, "a.tar.gz"), "a");
    writeFileSync(join(dir, "install.sh"), "#!/bin/sh\n");
    writeFileSync(join(dir, "unrelated.txt"), "x");
    const result = run([process.execPath, join(ROOT, "release/release.ts"), "--sums", dir]);
    expect(result.code).toBe(0);
    const text = readFileSync(join(dir, "SHA256SUMS"), "utf8");
    expect(result.stdout).toBe(text);
    expect(text.split("\n").filter(Boolean).map((l) => l.split("  ")[1])).toEqual(["a.tar.gz", "b.tar.gz", "install.sh"]);
    expect(run(["sha256sum", "-c", "SHA256SUMS"], dir).code).toBe(0);
  });
});
