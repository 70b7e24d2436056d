/**
 * `npm run release`: archive names, reproducible archives, format checks, the smoke test, and
 * the release of this machine's own target built twice and compared byte for byte. Building all
 * seven targets belongs to `npm run release`; here one native target (twice) and one cross target.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Entry, gzip, sha256, tar, writeArchive } from "../release/archive.ts";
import { codePageHashProblem, formatMismatch, readBinaryFormat } from "../release/binary-format.ts";
import { ROOT } from "../release/compile.ts";
import {
  NOTICE,
  UsageError,
  buildRelease,
  defaultTargets,
  finishRelease,
  parseReleaseArgs,
  refreshLatest,
  smokeReport,
  verdict,
  type ReleaseResult,
} from "../release/release.ts";
import { expectedMembers, runnerFor, smokeTest } from "../release/smoke.ts";
import { HELPER_NAME, MACOS_ONLY, RUNTIME_NAME, TARGETS, archiveName, archiveStem, compareVersions, findTarget, type Target } from "../release/targets.ts";
import { skipBecause } from "./support/platform.ts";
import { crossRuntimeUnavailable } from "./support/tools.ts";
import { tempDir, type Scratch } from "../kit/scratch.ts";

/** Why the linux-arm64 cross build cannot be made here (decided when the file loads), or null. */
const NO_ARM = skipBecause("release.test.ts, the linux-arm64 cross build", await crossRuntimeUnavailable("bun-linux-arm64"));

let scratchDir: Scratch;
let scratch: string;
beforeAll(() => {
  scratchDir = tempDir("phr-release-");
  scratch = scratchDir.path;
});
afterAll(() => scratchDir.cleanup());

function target(name: string): Target {
  const t = findTarget(name);
  if (!t) throw new Error(`no target ${name}`);
  return t;
}

/** Every file under `dir`, by path relative to it. */
function snapshot(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files.set(join(entry.parentPath, entry.name).slice(dir.length + 1), readFileSync(join(entry.parentPath, entry.name)));
  }
  return files;
}

/** The permission bits of `dir` (".") and of everything under it, by relative path. */
function modes(dir: string): Map<string, number> {
  const found = new Map<string, number>([[".", statSync(dir).mode & 0o777]]);
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    found.set(path.slice(dir.length + 1), statSync(path).mode & 0o777);
  }
  return found;
}

/** Directories 0755 and files 0644: what a web server running as another user can serve. */
function expectServable(dir: string): void {
  for (const [path, mode] of modes(dir)) {
    const isDir = statSync(join(dir, path)).isDirectory();
    expect({ path, mode: mode.toString(8) }).toEqual({ path, mode: isDir ? "755" : "644" });
  }
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
    const signed = smokeTest(pack(arm, true, machO(0x0100000c, 2)), arm, "0.0.1", false);
    expect(signed.problems).toEqual([]);
    // Passed, but it could not run here: "format checked", never "ok".
    expect(signed.ranWith).toBeUndefined();
    expect(verdict(signed)).toBe("format checked");
    expect(smokeReport("0.0.1", [signed], false)).toMatch(/^\| bun-darwin-arm64 \| Mach-O arm64 .*\| not executed: a darwin binary does not run on linux \| format checked \|$/m);
    expect(verdict(brokenResult)).toBe("FAIL");
    expect(smokeTest(pack(arm, true, machO(0x0100000c, 2, false)), arm, "0.0.1", false).problems).toEqual([
      "unsigned: macOS on arm64 runs only signed code",
    ]);
  });
});

describe("release", () => {
  const helperScript = () => {
    const file = join(scratch, "helper");
    // Answers describe like Paseo's helper: doctor (run by install.sh) runs it through exec.
    writeFileSync(file, `#!/bin/sh\necho '{"protocolVersion":1,"version":1,"capabilities":["files","watch","resolve-command"]}'\n`);
    return file;
  };
  const readme = () => {
    const file = join(scratch, "README.md");
    writeFileSync(file, "# paseo-host-runtime (test readme)\n");
    return file;
  };
  const host = TARGETS.find((t) => t.os === process.platform && t.arch === process.arch && !t.baseline && t.libc === readBinaryFormat(process.execPath).libc);
  /** This machine's release in scratch/one: the reproducibility test's first build, reused after it. */
  let built: ReleaseResult | undefined;
  const hostRelease = async (): Promise<ReleaseResult & { target: Target }> => {
    if (!host) throw new Error(`no release target for ${process.platform}-${process.arch}`);
    built ??= await buildRelease({ version: "1.2.3", helper: helperScript(), out: join(scratch, "one"), targets: [host], readme: readme(), mtime: 1_700_000_000, log: () => {} });
    return { ...built, target: host };
  };

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
    built = one;
    expect(one.sums).toBe(two.sums);
    expect(one.sums?.split("\n").filter(Boolean).map((l) => l.split("  ")[1])).toEqual(["install.sh", archiveName("1.2.3", host)]);
    const [smoke] = one.smoke;
    expect(smoke?.problems).toEqual([]);
    expect(smoke?.ranWith).toBe("native");
    expect(smoke?.versionLine).toStartWith(`${RUNTIME_NAME} 1.2.3 (${host.os}-${host.arch}, bun `);
    expect(one.ok).toBe(true);
    expect(one.report).toContain(`| ${host.bun} |`);
    expect(one.report).toMatch(new RegExp(`^\\| ${host.bun} \\|.*\\| ok \\|$`, "m"));
  }, 360_000);

  test("the output is laid out like the download site: download/vX.Y.Z/ and latest/download/", async () => {
    const { target: host, ...built } = await hostRelease();
    const out = join(scratch, "one");
    const files = [archiveName("1.2.3", host), "SHA256SUMS", "install.sh"].sort();
    expect(readdirSync(out).sort()).toEqual(["download", "latest", "smoke-report.md"]);
    expect(readdirSync(join(out, "download"))).toEqual(["v1.2.3"]);
    expect(built.dir).toBe(join(out, "download", "v1.2.3"));
    expect(readdirSync(built.dir).sort()).toEqual(files);
    expect(readdirSync(join(out, "latest"))).toEqual(["download"]);
    expect(readdirSync(join(out, "latest", "download")).sort()).toEqual(files);
    for (const name of files) expect(readFileSync(join(out, "latest", "download", name))).toEqual(readFileSync(join(built.dir, name)));
    expect(run(Bun.which("sha256sum") ? ["sha256sum", "-c", "SHA256SUMS"] : ["shasum", "-a", "256", "-c", "SHA256SUMS"], built.dir).code).toBe(0);
    // Servable by a web server that is not the builder: every directory 0755, every file 0644.
    expectServable(out);
  }, 360_000);

  const noDownloader = skipBecause("release.test.ts, installing from the release", !Bun.which("curl") && !Bun.which("wget") ? "install.sh needs curl or wget (apt-get install curl)" : null);

  test.skipIf(noDownloader)("served as is by a plain static server, it installs with curl | sh, runs, and a rerun downloads nothing", async () => {
    const { target: host } = await hostRelease();
    const out = join(scratch, "one");
    const requests: string[] = [];
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        const path = decodeURIComponent(new URL(req.url).pathname);
        requests.push(path);
        const file = join(out, path);
        return file.startsWith(`${out}/`) && existsSync(file) && statSync(file).isFile() ? new Response(Bun.file(file)) : new Response("not found", { status: 404 });
      },
    });
    const boxDir = tempDir("phr-release-install-");
    const box = boxDir.path;
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const script = await (await fetch(`${base}/latest/download/install.sh`)).text();
      const installSh = async (...args: string[]) => {
        const proc = Bun.spawn(["/bin/sh", "-s", "--", "--dir", join(box, "bin"), ...args], {
          env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: box, PASEO_HOST_RUNTIME_BASE_URL: base },
          stdin: new Blob([script]),
          stdout: "pipe",
          stderr: "pipe",
        });
        const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
        return { code: await proc.exited, stdout, stderr };
      };
      const first = await installSh();
      expect(first.stderr).toBe("");
      expect(first.code).toBe(0);
      expect(requests).toEqual(["/latest/download/install.sh", "/latest/download/SHA256SUMS", `/latest/download/${archiveName("1.2.3", host)}`]);
      expect(first.stdout).toContain(`Installed ${RUNTIME_NAME} 1.2.3 in ${join(box, "bin")}\n  ${RUNTIME_NAME} 1.2.3 (${host.os}-${host.arch}, bun `);
      expect(first.stdout).toContain(`${RUNTIME_NAME} doctor --quiet, as `);
      expect(first.stdout).toMatch(/\n {2}(no problems found|no required check failed \(warnings above\))\n/);
      expect(readdirSync(join(box, "bin")).sort()).toEqual([".paseo-host-runtime.installed", HELPER_NAME, RUNTIME_NAME].sort());
      const version = Bun.spawnSync([join(box, "bin", RUNTIME_NAME), "--version"]).stdout.toString();
      expect(version).toStartWith(`${RUNTIME_NAME} 1.2.3 (${host.os}-${host.arch}, bun `);
      requests.length = 0;
      const again = await installSh("--version", "1.2.3");
      expect(again.code).toBe(0);
      expect(requests).toEqual(["/download/v1.2.3/SHA256SUMS"]);
      expect(again.stdout).toContain(`${RUNTIME_NAME} 1.2.3 is already installed in ${join(box, "bin")}: nothing to download`);
    } finally {
      server.stop(true);
      boxDir.cleanup();
    }
  }, 360_000);

  test("a release with a failed archive writes no SHA256SUMS and leaves download/ and latest/ as they were", async () => {
    const { target: host, ...built } = await hostRelease();
    const out = join(scratch, "mixed");
    // An earlier good build of the same version is already in place.
    mkdirSync(join(out, "download"), { recursive: true });
    cpSync(built.dir, join(out, "download", "v1.2.3"), { recursive: true });
    refreshLatest(out);
    const before = snapshot(out);
    // This build: the good archive again, and one for the other CPU that holds this machine's /bin/true.
    const other = target(process.arch === "arm64" ? "linux-x64" : "linux-arm64");
    const staged = mkdtempSync(join(out, ".staging-"));
    copyFileSync(join(built.dir, archiveName("1.2.3", host)), join(staged, archiveName("1.2.3", host)));
    copyFileSync(join(built.dir, "install.sh"), join(staged, "install.sh"));
    const stem = archiveStem("1.2.3", other);
    writeArchive(join(staged, archiveName("1.2.3", other)), [
      { path: stem, mode: 0o755 },
      { path: `${stem}/${RUNTIME_NAME}`, mode: 0o755, data: readFileSync("/bin/true") },
      { path: `${stem}/${HELPER_NAME}`, mode: 0o755, data: Buffer.from("#!/bin/sh\n") },
      { path: `${stem}/LICENSE`, mode: 0o644, data: Buffer.from("MIT\n") },
      { path: `${stem}/README.md`, mode: 0o644, data: Buffer.from("#\n") },
    ], 0);
    // Under a umask that keeps everything private, the output is still servable.
    const umask = process.umask(0o077);
    let result: ReleaseResult;
    try {
      result = finishRelease({ version: "1.2.3", out, staged, targets: [host, other].sort((a, b) => TARGETS.indexOf(a) - TARGETS.indexOf(b)), withHelper: true, leftOut: [], log: () => {} });
    } finally {
      process.umask(umask);
    }
    expectServable(join(out, "failed"));
    expect(statSync(join(out, "smoke-report.md")).mode & 0o777).toBe(0o644);
    expect(result.ok).toBe(false);
    expect(result.sums).toBeNull();
    expect(result.dir).toBe(join(out, "failed", "v1.2.3"));
    expect(readdirSync(result.dir).sort()).toEqual([archiveName("1.2.3", host), archiveName("1.2.3", other), "install.sh"].sort());
    expect(result.report).toMatch(new RegExp(`^\\| ${other.bun} \\|.*\\| FAIL \\|$`, "m"));
    // download/ and latest/ are byte for byte what they were; no SHA256SUMS anywhere names the bad archive.
    const after = snapshot(out);
    for (const [path, bytes] of before) if (!path.startsWith("failed/")) expect(after.get(path)).toEqual(bytes);
    expect([...after.keys()].filter((path) => !path.startsWith("failed/") && path !== "smoke-report.md").sort()).toEqual([...before.keys()].sort());
    for (const [path, bytes] of after) if (path.endsWith("SHA256SUMS")) expect(bytes.toString()).not.toContain(archiveName("1.2.3", other));
    expect(readdirSync(out).filter((name) => name.startsWith("."))).toEqual([]);
  }, 360_000);

  const arm = target("linux-arm64");
  // Whether this host runs an arm64 glibc binary (qemu-user and the arm64 loader), decided here:
  // the smoke test must then run it; where it cannot, the report must say only "format checked".
  const armRunner = runnerFor(arm, { format: "ELF", arch: "arm64", libc: "glibc", interpreter: "/lib/ld-linux-aarch64.so.1" });
  const ARM_NOT_RUN = "notRun" in armRunner ? armRunner.notRun : null;
  skipBecause("release.test.ts, running the linux-arm64 build (its format is still checked)", ARM_NOT_RUN);
  test.skipIf(NO_ARM)("a --no-helper release for linux-arm64 holds a NOTICE and an arm64 ELF, run under qemu when it can", async () => {
    const result = await buildRelease({
      version: "1.2.3-rc.1",
      helper: null,
      out: join(scratch, "arm"),
      targets: [arm],
      readme: readme(),
      mtime: 1_700_000_000,
      log: () => {},
    });
    const list = run(["tar", "-tzf", result.archives[0]!]).stdout.trim().split("\n");
    const stem = archiveStem("1.2.3-rc.1", arm);
    expect(list).toEqual([`${stem}/`, `${stem}/${RUNTIME_NAME}`, `${stem}/NOTICE`, `${stem}/LICENSE`, `${stem}/README.md`]);
    expect(list).not.toContain(`${stem}/${HELPER_NAME}`);
    const [smoke] = result.smoke;
    expect(smoke?.format).toBe("ELF arm64 (glibc, /lib/ld-linux-aarch64.so.1)");
    expect(smoke?.problems).toEqual([]);
    if (ARM_NOT_RUN === null) {
      expect(smoke?.notRun).toBeUndefined();
      expect(smoke?.ranWith).toStartWith("qemu-aarch64");
      expect(smoke?.versionLine).toStartWith(`${RUNTIME_NAME} 1.2.3-rc.1 (linux-arm64, bun `);
      expect(result.report).toMatch(/^\| bun-linux-arm64 \|.*\| ok \|$/m);
    } else {
      expect(smoke?.notRun).toBe(ARM_NOT_RUN);
      expect(result.report).toMatch(/^\| bun-linux-arm64 \|.*\| format checked \|$/m);
    }
    expect(result.report).toContain("Built with --no-helper");
    // A pre-release is published under download/ but never becomes latest.
    expect(result.dir).toBe(join(scratch, "arm", "download", "v1.2.3-rc.1"));
    expect(existsSync(join(scratch, "arm", "latest"))).toBe(false);
  }, 180_000);
});

describe("latest and versions", () => {
  test("versions sort like semver: numbers by value, a pre-release before its release", () => {
    const sorted = ["1.10.0", "1.2.3", "1.2.3-rc.1", "1.2.3-rc.10", "1.2.3-rc.2", "1.2.3-alpha", "0.9.9", "2.0.0-beta.1"].sort(compareVersions);
    expect(sorted).toEqual(["0.9.9", "1.2.3-alpha", "1.2.3-rc.1", "1.2.3-rc.2", "1.2.3-rc.10", "1.2.3", "1.10.0", "2.0.0-beta.1"]);
  });

  test("latest/download is the newest complete release that is not a pre-release", () => {
    const out = join(scratch, "mirror");
    const release = (version: string, complete = true) => {
      mkdirSync(join(out, "download", `v${version}`), { recursive: true });
      writeFileSync(join(out, "download", `v${version}`, "install.sh"), version);
      if (complete) writeFileSync(join(out, "download", `v${version}`, "SHA256SUMS"), version);
    };
    release("1.2.3");
    release("1.10.0");
    release("2.0.0-rc.1");
    release("3.0.0", false);
    expect(refreshLatest(out)).toBe("1.10.0");
    expect(readFileSync(join(out, "latest", "download", "install.sh"), "utf8")).toBe("1.10.0");
    expect(statSync(join(out, "latest", "download", "install.sh")).ino).toBe(statSync(join(out, "download", "v1.10.0", "install.sh")).ino);
    rmSync(join(out, "download"), { recursive: true });
    release("0.1.0-rc.1");
    expect(refreshLatest(out)).toBeNull();
    expect(existsSync(join(out, "latest", "download"))).toBe(false);
  });
});

describe("command line", () => {
  const parse = (...argv: string[]) => parseReleaseArgs(argv, false);
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
    expect(build().helper).toBeNull();
    expect(build("--targets", "darwin-arm64,bun-linux-x64").targets.map((t) => t.bun)).toEqual(["bun-linux-x64", "bun-darwin-arm64"]);
    expect(build("--targets=linux").targets.map((t) => t.platform)).toEqual(["linux-x64", "linux-x64-baseline", "linux-arm64", "linux-x64-musl", "linux-arm64-musl"]);
    expect(build("--out", "x").out).toBe(join(process.cwd(), "x"));
  });

  test("by default, a host without codesign builds every target but the ones only macOS builds right, and says why", () => {
    const build = (canSign: boolean, ...argv: string[]) => {
      const c = parseReleaseArgs(["--version", "1.2.3", "--no-helper", ...argv], canSign);
      if (c.kind !== "build") throw new Error("not a build");
      return c.options;
    };
    const linux = build(false);
    expect(linux.targets.map((t) => t.bun)).toEqual(TARGETS.map((t) => t.bun).filter((name) => name !== "bun-darwin-x64"));
    expect(linux.leftOut?.map((l) => [l.target.bun, l.reason])).toEqual([["bun-darwin-x64", MACOS_ONLY.get("bun-darwin-x64")!]]);
    expect(MACOS_ONLY.get("bun-darwin-x64")).toContain("page hashes do not match");
    expect(defaultTargets(false)).toEqual({ targets: [...linux.targets], leftOut: [...linux.leftOut!] });
    // On macOS (codesign present): all seven, nothing left out.
    expect(build(true).targets).toEqual([...TARGETS]);
    expect(build(true).leftOut).toEqual([]);
    expect(build(true, "--targets", "darwin").targets.map((t) => t.bun)).toEqual(["bun-darwin-x64", "bun-darwin-arm64"]);
    // Asked for explicitly where it cannot be built right: refused before building anything.
    expect(() => build(false, "--targets", "darwin")).toThrow(`bun-darwin-x64 can only be built correctly on macOS: ${MACOS_ONLY.get("bun-darwin-x64")}`);
    expect(build(false, "--targets", "darwin-arm64").leftOut).toEqual([]);
  });

  test("the smoke report says which targets were left out, and why", () => {
    const report = smokeReport("1.2.3", [], false, defaultTargets(false).leftOut);
    expect(report).toContain("Not built on this host (left for macOS):\n- bun-darwin-x64: Bun keeps the original bun binary's Developer ID signature");
    expect(report).toContain("`npm run release -- --version 1.2.3 ... --targets darwin-x64`");
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
