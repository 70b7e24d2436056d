/**
 * install.sh against a release served from 127.0.0.1, laid out like GitHub's
 * (`/releases/download/vX.Y.Z/<file>`, `/releases/latest/download/<file>` redirecting to the
 * newest). The archives are made with release/archive.ts exactly as `npm run release` makes
 * them, with tiny shell scripts standing in for the two executables.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Entry, writeArchive, writeSums } from "../release/archive.ts";
import { NOTICE } from "../release/release.ts";
import { HELPER_NAME, RUNTIME_NAME, TARGETS, archiveName, archiveStem } from "../release/targets.ts";

const INSTALL_SH = join(import.meta.dir, "..", "install.sh");
const MANIFEST = ".paseo-host-runtime.installed";
const LATEST = "1.1.0";

/** The platform install.sh should detect on this machine (no overrides). */
function hostPlatform(): string {
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  const musl = readdirSync("/lib").some((name) => name.startsWith("ld-musl-"));
  const avx2 = arch === "x64" && /\bavx2\b/.test(readFileSync("/proc/cpuinfo", "utf8"));
  return `linux-${arch}${musl ? "-musl" : ""}${arch === "x64" && !avx2 ? "-baseline" : ""}`;
}

function standIn(name: string, version: string, platform: string, kind: string): Uint8Array {
  return Buffer.from(`#!/bin/sh\necho "${name} ${version} (${platform} ${kind})"\n`);
}

/** One release directory: an archive per target, install.sh and SHA256SUMS. */
function makeRelease(dir: string, version: string, withHelper = true, kind = "stand-in"): void {
  mkdirSync(dir, { recursive: true });
  for (const t of TARGETS) {
    const stem = archiveStem(version, t);
    const second: Entry = withHelper
      ? { path: `${stem}/${HELPER_NAME}`, mode: 0o755, data: standIn(HELPER_NAME, version, t.platform, kind) }
      : { path: `${stem}/NOTICE`, mode: 0o644, data: Buffer.from(NOTICE) };
    writeArchive(
      join(dir, archiveName(version, t)),
      [
        { path: stem, mode: 0o755 },
        { path: `${stem}/${RUNTIME_NAME}`, mode: 0o755, data: standIn(RUNTIME_NAME, version, t.platform, kind) },
        second,
        { path: `${stem}/LICENSE`, mode: 0o644, data: Buffer.from("MIT\n") },
        { path: `${stem}/README.md`, mode: 0o644, data: Buffer.from("# stand-in\n") },
      ],
      1_700_000_000,
    );
  }
  copyFileSync(INSTALL_SH, join(dir, "install.sh"));
  writeSums(dir, ["install.sh"]);
}

let root: string;
let server: Server<undefined>;
let baseUrl: string;
const requests: string[] = [];

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "phr-install-releases-"));
  const download = join(root, "download");
  makeRelease(join(download, "v1.0.0"), "1.0.0");
  makeRelease(join(download, `v${LATEST}`), LATEST);
  makeRelease(join(download, "v2.0.0"), "2.0.0", false);
  // A release whose archives were replaced by other valid archives after SHA256SUMS was written.
  makeRelease(join(download, "v6.6.6"), "6.6.6");
  const honestSums = readFileSync(join(download, "v6.6.6", "SHA256SUMS"));
  makeRelease(join(download, "v6.6.6"), "6.6.6", true, "tampered");
  writeFileSync(join(download, "v6.6.6", "SHA256SUMS"), honestSums);
  // A release whose SHA256SUMS lists no archive at all.
  makeRelease(join(download, "v7.7.7"), "7.7.7");
  const sums = readFileSync(join(download, "v7.7.7", "SHA256SUMS"), "utf8");
  writeFileSync(join(download, "v7.7.7", "SHA256SUMS"), sums.split("\n").filter((l) => !l.includes(".tar.gz")).join("\n"));

  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = decodeURIComponent(new URL(req.url).pathname);
      requests.push(path);
      const latest = path.match(/^\/releases\/latest\/download\/([^/]+)$/);
      if (latest) return Response.redirect(new URL(`/releases/download/v${LATEST}/${latest[1]}`, req.url).href, 302);
      const file = path.match(/^\/releases\/download\/(v[^/]+)\/([^/]+)$/);
      if (file && existsSync(join(download, file[1]!, file[2]!))) return new Response(Bun.file(join(download, file[1]!, file[2]!)));
      return new Response("not found", { status: 404 });
    },
  });
  baseUrl = `http://127.0.0.1:${server.port}/releases`;
});

afterAll(() => {
  server?.stop(true);
  rmSync(root, { recursive: true, force: true });
});

/** Per test: a HOME, an install directory that does not exist yet, and a TMPDIR that must end empty. */
let sandbox: string;
let home: string;
let dir: string;
let scratch: string;

beforeEach(() => {
  sandbox = mkdtempSync(join(tmpdir(), "phr-install-"));
  home = join(sandbox, "home");
  dir = join(sandbox, "bin");
  scratch = join(sandbox, "tmp");
  mkdirSync(home);
  mkdirSync(scratch);
  requests.length = 0;
});

afterEach(() => {
  const leftovers = readdirSync(scratch);
  rmSync(sandbox, { recursive: true, force: true });
  // install.sh removes its own temp directory on every exit path.
  expect(leftovers).toEqual([]);
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs install.sh (asynchronously: the server answering it lives in this process). */
async function installSh(args: string[], env: Record<string, string> = {}, prefix: string[] = []): Promise<Run> {
  const proc = Bun.spawn([...prefix, "/bin/sh", INSTALL_SH, ...args], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      TMPDIR: scratch,
      SHELL: "/bin/sh",
      PASEO_HOST_RUNTIME_BASE_URL: baseUrl,
      ...env,
    },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code: await proc.exited, stdout, stderr };
}

function ok(run: Run): Run {
  if (run.code !== 0) throw new Error(`install.sh exited ${run.code}\n${run.stdout}${run.stderr}`);
  return run;
}

function runInstalled(name: string): string {
  return Bun.spawnSync([join(dir, name)]).stdout.toString().trim();
}

/** A PATH directory of fake `uname`, `sysctl` and `ldd` answering from FAKE_* variables. */
function fakeSystem(): string {
  const bin = join(sandbox, "fake-bin");
  mkdirSync(bin, { recursive: true });
  const script = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  script("uname", `case "$1" in -s) echo "$FAKE_UNAME_S" ;; -m) echo "$FAKE_UNAME_M" ;; esac`);
  script("sysctl", `case "$2" in sysctl.proc_translated) echo "\${FAKE_TRANSLATED:-0}" ;; hw.optional.avx2_0) echo "\${FAKE_AVX2:-1}" ;; esac`);
  script("ldd", `echo "\${FAKE_LDD:-ldd (GNU libc) 2.36}"`);
  return `${bin}:${process.env.PATH}`;
}

describe("install", () => {
  test("a fresh install puts both executables in --dir, verified, with a manifest and next steps", async () => {
    const run = ok(await installSh(["--dir", dir]));
    const platform = hostPlatform();
    expect(run.stdout).toContain(`platform ${platform}, directory ${dir}`);
    expect(run.stdout).toContain(`Installing ${RUNTIME_NAME} ${LATEST} (${platform}) into ${dir}`);
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, HELPER_NAME, RUNTIME_NAME].sort());
    for (const name of [RUNTIME_NAME, HELPER_NAME]) expect(statSync(join(dir, name)).mode & 0o777).toBe(0o755);
    expect(runInstalled(RUNTIME_NAME)).toBe(`${RUNTIME_NAME} ${LATEST} (${platform} stand-in)`);
    expect(runInstalled(HELPER_NAME)).toBe(`${HELPER_NAME} ${LATEST} (${platform} stand-in)`);
    // The latest release was found through SHA256SUMS, then its archive was downloaded once.
    expect(requests).toEqual([
      "/releases/latest/download/SHA256SUMS",
      `/releases/download/v${LATEST}/SHA256SUMS`,
      `/releases/latest/download/${RUNTIME_NAME}-${LATEST}-${platform}.tar.gz`,
      `/releases/download/v${LATEST}/${RUNTIME_NAME}-${LATEST}-${platform}.tar.gz`,
    ]);
    // Not on PATH: a hint, and the Paseo config.json entry with the absolute path.
    expect(run.stdout).toContain(`export PATH="${dir}:$PATH"`);
    expect(run.stdout).toContain(`"workspaceRuntimes": {`);
    expect(run.stdout).toContain(`"command": ["${dir}/${RUNTIME_NAME}"],`);
    // No shell startup file was touched.
    expect(readdirSync(home)).toEqual([]);
  });

  test("PASEO_HOST_RUNTIME_VERSION and PASEO_HOST_RUNTIME_INSTALL choose the version and the directory", async () => {
    ok(await installSh([], { PASEO_HOST_RUNTIME_VERSION: "1.0.0", PASEO_HOST_RUNTIME_INSTALL: dir }));
    expect(runInstalled(RUNTIME_NAME)).toStartWith(`${RUNTIME_NAME} 1.0.0 `);
    expect(requests[0]).toBe("/releases/download/v1.0.0/SHA256SUMS");
  });

  test("an upgrade replaces both files through a rename and rewrites the manifest", async () => {
    ok(await installSh(["--dir", dir, "--version", "v1.0.0"]));
    const before = readFileSync(join(dir, MANIFEST), "utf8");
    expect(before).toStartWith("version 1.0.0\n");
    const inode = statSync(join(dir, RUNTIME_NAME)).ino;
    const run = ok(await installSh(["--dir", dir]));
    expect(run.stdout).toContain(`installed ${dir}/${RUNTIME_NAME}`);
    expect(runInstalled(RUNTIME_NAME)).toStartWith(`${RUNTIME_NAME} ${LATEST} `);
    expect(runInstalled(HELPER_NAME)).toStartWith(`${HELPER_NAME} ${LATEST} `);
    expect(statSync(join(dir, RUNTIME_NAME)).ino).not.toBe(inode);
    expect(readFileSync(join(dir, MANIFEST), "utf8")).toStartWith(`version ${LATEST}\n`);
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, HELPER_NAME, RUNTIME_NAME].sort());
  });

  test("rerunning the same version leaves the installed files untouched", async () => {
    ok(await installSh(["--dir", dir]));
    const inodes = [RUNTIME_NAME, HELPER_NAME].map((name) => statSync(join(dir, name)).ino);
    const manifest = readFileSync(join(dir, MANIFEST), "utf8");
    const run = ok(await installSh(["--dir", dir]));
    expect(run.stdout).toContain(`${dir}/${RUNTIME_NAME} is already this version`);
    expect(run.stdout).toContain(`${dir}/${HELPER_NAME} is already this version`);
    expect([RUNTIME_NAME, HELPER_NAME].map((name) => statSync(join(dir, name)).ino)).toEqual(inodes);
    expect(readFileSync(join(dir, MANIFEST), "utf8")).toBe(manifest);
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, HELPER_NAME, RUNTIME_NAME].sort());
  });

  test("--uninstall removes exactly what was installed, and nothing else", async () => {
    mkdirSync(dir);
    writeFileSync(join(dir, "someone-elses-tool"), "#!/bin/sh\n");
    ok(await installSh(["--dir", dir]));
    const run = ok(await installSh(["--dir", dir, "--uninstall"]));
    expect(run.stdout).toContain(`removed ${dir}/${RUNTIME_NAME}`);
    expect(run.stdout).toContain(`removed ${dir}/${HELPER_NAME}`);
    expect(readdirSync(dir)).toEqual(["someone-elses-tool"]);
    // Idempotent: a second uninstall finds nothing to do.
    expect(ok(await installSh(["--dir", dir, "--uninstall"])).stdout).toContain("Nothing to uninstall");
  });

  test("--uninstall keeps a file that changed after it was installed", async () => {
    ok(await installSh(["--dir", dir]));
    writeFileSync(join(dir, HELPER_NAME), "#!/bin/sh\necho replaced by the operator\n");
    const run = ok(await installSh(["--dir", dir, "--uninstall"]));
    expect(run.stdout).toContain(`kept ${dir}/${HELPER_NAME}: it changed since it was installed`);
    expect(readdirSync(dir)).toEqual([HELPER_NAME]);
  });

  test("an install interrupted mid-way leaves no temporary file and can still be uninstalled", async () => {
    // A `cp` that copies the helper into place, then has install.sh terminated before the rename.
    const bin = join(sandbox, "interrupting-bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "cp"), `#!/bin/sh\n/bin/cp "$@"\ncase "$1" in */${HELPER_NAME}) kill -TERM $PPID; sleep 0.2 ;; esac\n`);
    chmodSync(join(bin, "cp"), 0o755);
    const run = await installSh(["--dir", dir], { PATH: `${bin}:${process.env.PATH}` });
    expect(run.code).toBe(1);
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, RUNTIME_NAME].sort());
    const uninstall = ok(await installSh(["--dir", dir, "--uninstall"]));
    expect(uninstall.stdout).toContain(`removed ${dir}/${RUNTIME_NAME}`);
    expect(uninstall.stdout).toContain(`${dir}/${HELPER_NAME} is already gone`);
    expect(readdirSync(dir)).toEqual([]);
  });

  test("a release built with --no-helper installs the runtime alone and shows its NOTICE", async () => {
    const run = ok(await installSh(["--dir", dir, "--version", "2.0.0"]));
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, RUNTIME_NAME].sort());
    expect(run.stdout).toContain(`this release ships without ${HELPER_NAME}`);
    expect(run.stdout).toContain("helperPath");
    expect(readFileSync(join(dir, MANIFEST), "utf8")).not.toContain(HELPER_NAME);
  });
});

describe("verification", () => {
  test("a tampered archive aborts with a checksum mismatch and installs nothing", async () => {
    const run = await installSh(["--dir", dir, "--version", "6.6.6"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("checksum mismatch");
    expect(run.stderr).toContain("nothing installed");
    expect(existsSync(dir)).toBe(false);
  });

  test("a tampered archive does not replace an existing installation", async () => {
    ok(await installSh(["--dir", dir, "--version", "1.0.0"]));
    const before = readdirSync(dir).map((name) => [name, readFileSync(join(dir, name), "utf8")]);
    expect((await installSh(["--dir", dir, "--version", "6.6.6"])).code).toBe(1);
    expect(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name), "utf8")])).toEqual(before);
  });

  test("an archive missing from SHA256SUMS aborts before it is downloaded", async () => {
    const run = await installSh(["--dir", dir, "--version", "7.7.7"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`SHA256SUMS has no entry for ${RUNTIME_NAME}-7.7.7-${hostPlatform()}.tar.gz`);
    expect(requests).toEqual(["/releases/download/v7.7.7/SHA256SUMS"]);
    expect(existsSync(dir)).toBe(false);
  });

  test("a version that does not exist fails with the URL it tried", async () => {
    const run = await installSh(["--dir", dir, "--version", "9.9.9"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`download failed: ${baseUrl}/download/v9.9.9/SHA256SUMS`);
    expect(existsSync(dir)).toBe(false);
  });

  test("it works with wget and shasum alone (no curl, no sha256sum)", async () => {
    const tools = join(sandbox, "tools");
    mkdirSync(tools);
    const needed = ["awk", "basename", "cat", "chmod", "cmp", "cp", "cut", "grep", "gzip", "id", "ldd", "mkdir", "mktemp", "mv", "rm", "sed", "tar", "uname", "wget", "shasum", "perl"];
    for (const name of needed) {
      const found = Bun.which(name);
      if (!found) throw new Error(`this test needs ${name} on PATH`);
      symlinkSync(found, join(tools, name));
    }
    const run = ok(await installSh(["--dir", dir], { PATH: tools }));
    expect(run.stdout).toContain(`Installing ${RUNTIME_NAME} ${LATEST}`);
    expect(runInstalled(RUNTIME_NAME)).toStartWith(`${RUNTIME_NAME} ${LATEST} `);
    expect(ok(await installSh(["--dir", dir, "--uninstall"], { PATH: tools })).stdout).toContain("Uninstalled");
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe("platform detection", () => {
  const cases: [string, Record<string, string>, string][] = [
    ["macOS on Apple silicon", { FAKE_UNAME_S: "Darwin", FAKE_UNAME_M: "arm64" }, "darwin-arm64"],
    ["macOS on Intel", { FAKE_UNAME_S: "Darwin", FAKE_UNAME_M: "x86_64" }, "darwin-x64"],
    ["a shell under Rosetta 2 gets the arm64 build", { FAKE_UNAME_S: "Darwin", FAKE_UNAME_M: "x86_64", FAKE_TRANSLATED: "1" }, "darwin-arm64"],
    ["Linux on arm64", { FAKE_UNAME_S: "Linux", FAKE_UNAME_M: "aarch64" }, "linux-arm64"],
    ["musl Linux (ldd says so) on arm64", { FAKE_UNAME_S: "Linux", FAKE_UNAME_M: "aarch64", FAKE_LDD: "musl libc (aarch64)" }, "linux-arm64-musl"],
  ];
  for (const [name, env, platform] of cases) {
    test(`${name} → ${platform}`, async () => {
      ok(await installSh(["--dir", dir], { PATH: fakeSystem(), ...env }));
      expect(runInstalled(RUNTIME_NAME)).toBe(`${RUNTIME_NAME} ${LATEST} (${platform} stand-in)`);
    });
  }

  test("x64 Linux gets -baseline exactly when /proc/cpuinfo lacks avx2, and -musl under musl", async () => {
    const avx2 = /\bavx2\b/.test(readFileSync("/proc/cpuinfo", "utf8"));
    ok(await installSh(["--dir", dir], { PATH: fakeSystem(), FAKE_UNAME_S: "Linux", FAKE_UNAME_M: "x86_64" }));
    expect(runInstalled(RUNTIME_NAME)).toContain(avx2 ? "(linux-x64 stand-in)" : "(linux-x64-baseline stand-in)");
    const musl = await installSh(["--dir", dir], { PATH: fakeSystem(), FAKE_UNAME_S: "Linux", FAKE_UNAME_M: "x86_64", FAKE_LDD: "musl libc (x86_64)" });
    if (avx2) expect(runInstalled(RUNTIME_NAME)).toContain("(linux-x64-musl stand-in)");
    else expect(musl.stderr).toContain("unsupported platform: linux-x64-musl-baseline");
  });

  test("an Intel Mac without AVX2 is refused: there is no darwin baseline build", async () => {
    const run = await installSh(["--dir", dir], { PATH: fakeSystem(), FAKE_UNAME_S: "Darwin", FAKE_UNAME_M: "x86_64", FAKE_AVX2: "0" });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("unsupported platform: darwin-x64-baseline (this x64 CPU lacks AVX2");
    expect(requests).toEqual([]);
  });

  test("an unsupported OS or CPU is refused with a clear message before any download", async () => {
    const freebsd = await installSh(["--dir", dir], { PATH: fakeSystem(), FAKE_UNAME_S: "FreeBSD", FAKE_UNAME_M: "amd64" });
    expect(freebsd.code).toBe(1);
    expect(freebsd.stderr).toBe("install.sh: error: unsupported operating system: FreeBSD (releases exist for Linux and macOS)\n");
    const riscv = await installSh(["--dir", dir], { PATH: fakeSystem(), FAKE_UNAME_S: "Linux", FAKE_UNAME_M: "riscv64" });
    expect(riscv.code).toBe(1);
    expect(riscv.stderr).toBe("install.sh: error: unsupported CPU architecture: riscv64 (releases exist for x64 and arm64)\n");
    expect(requests).toEqual([]);
    expect(existsSync(dir)).toBe(false);
  });

  test("--platform and PASEO_HOST_RUNTIME_PLATFORM skip detection; an unknown one is refused", async () => {
    ok(await installSh(["--dir", dir, "--platform", "linux-x64-musl"]));
    expect(runInstalled(RUNTIME_NAME)).toContain("(linux-x64-musl stand-in)");
    ok(await installSh(["--dir", dir], { PASEO_HOST_RUNTIME_PLATFORM: "linux-x64-baseline" }));
    expect(runInstalled(RUNTIME_NAME)).toContain("(linux-x64-baseline stand-in)");
    const run = await installSh(["--dir", dir, "--platform", "windows-x64"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("unsupported platform: windows-x64");
  });
});

describe("directory and PATH", () => {
  test("the default directory is ~/.local/bin for a user and /usr/local/bin for root", async () => {
    if (process.getuid?.() === 0) {
      // Root: only the announced directory is checked; the download fails before anything is written.
      const asRoot = await installSh([], { PASEO_HOST_RUNTIME_BASE_URL: `${baseUrl}/missing` });
      expect(asRoot.stdout).toContain("directory /usr/local/bin");
      expect(asRoot.code).toBe(1);
      // A user: run as nobody with a HOME it owns.
      chmodSync(sandbox, 0o755);
      chmodSync(home, 0o777);
      chmodSync(scratch, 0o777);
      const asUser = await installSh([], {}, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]);
      expect(asUser.stderr).toBe("");
      expect(asUser.code).toBe(0);
    } else {
      ok(await installSh([]));
    }
    expect(readdirSync(join(home, ".local", "bin")).sort()).toEqual([MANIFEST, HELPER_NAME, RUNTIME_NAME].sort());
  });

  test("--modify-path adds one marked line to the shell's startup file; --uninstall takes it out", async () => {
    const bashrc = join(home, ".bashrc");
    writeFileSync(bashrc, "alias ll='ls -l'\n");
    const line = `export PATH="${dir}:$PATH" # added by paseo-host-runtime install.sh`;
    const first = ok(await installSh(["--dir", dir, "--modify-path"], { SHELL: "/bin/bash" }));
    expect(first.stdout).toContain(`added ${dir} to PATH in ${bashrc}`);
    expect(readFileSync(bashrc, "utf8")).toBe(`alias ll='ls -l'\n${line}\n`);
    // Rerun with it, and without it: still one line, still remembered for --uninstall.
    expect(ok(await installSh(["--dir", dir, "--modify-path"], { SHELL: "/bin/bash" })).stdout).toContain("already adds");
    ok(await installSh(["--dir", dir], { SHELL: "/bin/bash" }));
    expect(readFileSync(bashrc, "utf8")).toBe(`alias ll='ls -l'\n${line}\n`);
    // The new PATH line works in a login of that shell.
    const path = Bun.spawnSync(["bash", "-c", `. ${bashrc}; command -v ${RUNTIME_NAME}`], { env: { HOME: home, PATH: "/usr/bin:/bin" } });
    expect(path.stdout.toString().trim()).toBe(join(dir, RUNTIME_NAME));
    ok(await installSh(["--dir", dir, "--uninstall"], { SHELL: "/bin/bash" }));
    expect(readFileSync(bashrc, "utf8")).toBe("alias ll='ls -l'\n");
  });

  test("--modify-path picks ~/.zshrc for zsh and ~/.profile for other shells", async () => {
    ok(await installSh(["--dir", dir, "--modify-path"], { SHELL: "/usr/bin/zsh" }));
    expect(readFileSync(join(home, ".zshrc"), "utf8")).toContain(`export PATH="${dir}:$PATH"`);
    ok(await installSh(["--dir", dir, "--uninstall"]));
    ok(await installSh(["--dir", dir, "--modify-path"], { SHELL: "/bin/dash" }));
    expect(readFileSync(join(home, ".profile"), "utf8")).toContain(`export PATH="${dir}:$PATH"`);
  });

  test("a directory already on PATH gets no hint", async () => {
    const run = ok(await installSh(["--dir", dir], { PATH: `${dir}:${process.env.PATH}` }));
    expect(run.stdout).not.toContain("is not on your PATH");
  });

  test("--help describes every option; an unknown option is refused", async () => {
    const help = ok(await installSh(["--help"]));
    for (const option of ["--version", "--dir", "--platform", "--modify-path", "--uninstall", "PASEO_HOST_RUNTIME_BASE_URL"]) {
      expect(help.stdout).toContain(option);
    }
    const bad = await installSh(["--frobnicate"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe("install.sh: error: unknown option: --frobnicate (see --help)\n");
  });
});

const shellcheck = Bun.which("shellcheck");
if (!shellcheck) console.warn("install.test.ts: shellcheck is not installed, so `shellcheck install.sh` is skipped (apt-get install -y shellcheck)");

test.skipIf(!shellcheck)("shellcheck install.sh is clean", () => {
  const run = Bun.spawnSync([shellcheck!, "--shell=sh", INSTALL_SH]);
  expect(run.stdout.toString() + run.stderr.toString()).toBe("");
  expect(run.exitCode).toBe(0);
});
