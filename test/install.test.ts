/**
 * install.sh against a release served from 127.0.0.1, laid out like GitHub's
 * (`/releases/download/vX.Y.Z/<file>`, `/releases/latest/download/<file>` redirecting to the
 * newest). The archives are made with release/archive.ts exactly as `npm run release` makes
 * them, with tiny shell scripts standing in for the two executables. (test/release.test.ts
 * installs a real release from a plain static server.)
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { type Entry, writeArchive, writeSums } from "../release/archive.ts";
import { NOTICE } from "../release/release.ts";
import { HELPER_NAME, RUNTIME_NAME, TARGETS, archiveName, archiveStem } from "../release/targets.ts";
import { BIN } from "../kit/binary.ts";
import { RELEASE_VERSION_PATTERN } from "../src/version.ts";
import { tempDir, type Scratch } from "../kit/scratch.ts";
import { HELPER_PACKAGE, helperDependency, helperStandIn, pack, startRegistry, type NpmRegistry } from "./support/npm-registry.ts";
import { linuxOnly, skipBecause, withoutRoot } from "./support/platform.ts";
import { missingTools } from "./support/tools.ts";
import { oneCommitRepo, worktrees } from "./support/git.ts";

const INSTALL_SH = join(import.meta.dir, "..", "install.sh");
/** The version of the binary under test (its doctor's fix lines install that version). */
const BIN_VERSION = /^paseo-host-runtime (\S+) /.exec(Bun.spawnSync([BIN, "--version"]).stdout.toString())![1]!;

/** install.sh downloads with curl or wget: without either, no install can be tested here. */
const noDownloader = skipBecause("install.test.ts, every install", !Bun.which("curl") && !Bun.which("wget") ? "neither curl nor wget is on PATH (apt-get install curl, or run .ci/run)" : null);
const MANIFEST = ".paseo-host-runtime.installed";
const LATEST = "1.1.0";

/** The platform install.sh should detect on this machine (no overrides; an x64 Mac is taken to have AVX2). */
function hostPlatform(): string {
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  if (process.platform === "darwin") return `darwin-${arch}`;
  const musl = readdirSync("/lib").some((name) => name.startsWith("ld-musl-"));
  const avx2 = arch === "x64" && /\bavx2\b/.test(readFileSync("/proc/cpuinfo", "utf8"));
  return `linux-${arch}${musl ? "-musl" : ""}${arch === "x64" && !avx2 ? "-baseline" : ""}`;
}

/**
 * A stand-in executable: prints `NAME VERSION (PLATFORM KIND)`; the runtime's `doctor` prints
 * its argv and the release site it was given, and exits $STANDIN_DOCTOR_EXIT; a "broken" one
 * cannot even say its version.
 */
function standIn(name: string, version: string, platform: string, kind: string): Uint8Array {
  if (kind === "broken") return Buffer.from(`#!/bin/sh\necho "exec format error" >&2\nexit 126\n`);
  const doctor = name === RUNTIME_NAME ? `if [ "$1" = doctor ]; then echo "! stand-in $* (release site \${PASEO_HOST_RUNTIME_BASE_URL:-unset})"; exit "\${STANDIN_DOCTOR_EXIT:-0}"; fi\n${HOMES}` : "";
  return Buffer.from(`#!/bin/sh\n${doctor}echo "${name} ${version} (${platform} ${kind})"\n`);
}

/**
 * With STANDIN_HOMES set, the stand-in runtime answers `homes` as the real binary does (install.sh
 * --uninstall asks it); without, as a runtime too old to know `homes` does: a usage error, exit 2.
 */
const HOMES = `if [ "$1" = homes ]; then if [ -n "\${STANDIN_HOMES:-}" ]; then exec '${BIN}' "$@"; fi; echo 'unknown command "homes"' >&2; exit 2; fi\n`;

/** A helper as a Paseo release would publish it, and its SHA-256. */
const PASEO_HELPER = Buffer.from(`#!/bin/sh\necho "paseo's own helper $*"\n`);
const PASEO_HELPER_SHA256 = new Bun.CryptoHasher("sha256").update(PASEO_HELPER).digest("hex");

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

let rootDir: Scratch;
let root: string;
let server: Server<undefined>;
let baseUrl: string;
const requests: string[] = [];

beforeAll(() => {
  rootDir = tempDir("phr-install-releases-");
  root = rootDir.path;
  const download = join(root, "download");
  makeRelease(join(download, "v1.0.0"), "1.0.0");
  makeRelease(join(download, `v${LATEST}`), LATEST);
  makeRelease(join(download, "v2.0.0"), "2.0.0", false);
  // The release the binary under test names in its fix lines (doctor's), when it is a release version.
  if (RELEASE_VERSION_PATTERN.test(BIN_VERSION) && !existsSync(join(download, `v${BIN_VERSION}`))) makeRelease(join(download, `v${BIN_VERSION}`), BIN_VERSION, false);
  // A release whose archives were replaced by other valid archives after SHA256SUMS was written.
  makeRelease(join(download, "v6.6.6"), "6.6.6");
  const honestSums = readFileSync(join(download, "v6.6.6", "SHA256SUMS"));
  makeRelease(join(download, "v6.6.6"), "6.6.6", true, "tampered");
  writeFileSync(join(download, "v6.6.6", "SHA256SUMS"), honestSums);
  // A release whose SHA256SUMS lists no archive at all.
  makeRelease(join(download, "v7.7.7"), "7.7.7");
  const sums = readFileSync(join(download, "v7.7.7", "SHA256SUMS"), "utf8");
  writeFileSync(join(download, "v7.7.7", "SHA256SUMS"), sums.split("\n").filter((l) => !l.includes(".tar.gz")).join("\n"));
  // A release whose runtime does not run here.
  makeRelease(join(download, "v3.3.3"), "3.3.3", true, "broken");
  // Helpers as Paseo publishes them: one with a SHA256SUMS beside it, one without.
  mkdirSync(join(root, "paseo", "v9.0.0"), { recursive: true });
  writeFileSync(join(root, "paseo", "v9.0.0", HELPER_NAME), PASEO_HELPER);
  writeFileSync(join(root, "paseo", "v9.0.0", "SHA256SUMS"), `${"0".repeat(64)}  other-file\n${PASEO_HELPER_SHA256}  ${HELPER_NAME}\n`);
  mkdirSync(join(root, "paseo", "bare"), { recursive: true });
  writeFileSync(join(root, "paseo", "bare", HELPER_NAME), PASEO_HELPER);

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
      const paseo = path.match(/^\/paseo\/([^/]+)\/([^/]+)$/);
      if (paseo && existsSync(join(root, "paseo", paseo[1]!, paseo[2]!))) return new Response(Bun.file(join(root, "paseo", paseo[1]!, paseo[2]!)));
      return new Response("not found", { status: 404 });
    },
  });
  baseUrl = `http://127.0.0.1:${server.port}/releases`;
});

afterAll(() => {
  server?.stop(true);
  rootDir.cleanup();
});

/** Per test: a HOME, an install directory that does not exist yet, and a TMPDIR that must end empty. */
let sandboxDir: Scratch;
let sandbox: string;
let home: string;
let dir: string;
let scratch: string;

beforeEach(() => {
  sandboxDir = tempDir("phr-install-");
  // Its real path: install.sh names directories as `pwd -P` does (macOS's TMPDIR is a symlink).
  sandbox = realpathSync(sandboxDir.path);
  home = join(sandbox, "home");
  dir = join(sandbox, "bin");
  scratch = join(sandbox, "tmp");
  mkdirSync(home);
  mkdirSync(scratch);
  requests.length = 0;
});

afterEach(() => {
  const leftovers = readdirSync(scratch);
  sandboxDir.cleanup();
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

describe.skipIf(noDownloader)("install", () => {
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
    // Then it ran what it installed: --version, and doctor --quiet, whose report it shows.
    expect(run.stdout).toContain(`Installed ${RUNTIME_NAME} ${LATEST} in ${dir}\n  ${RUNTIME_NAME} ${LATEST} (${platform} stand-in)\n`);
    expect(run.stdout).toContain(`doctor --quiet, as `);
    // doctor was told the release site in use, so its fixes name this mirror.
    expect(run.stdout).toContain(`! stand-in doctor --quiet (release site ${baseUrl})\n  no required check failed (warnings above)\n`);
    // Not a terminal: no progress bar, nothing at all on stderr.
    expect(run.stderr).toBe("");
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

  test("an upgrade replaces both files through a rename, rewrites the manifest and says upgraded X → Y", async () => {
    ok(await installSh(["--dir", dir, "--version", "v1.0.0"]));
    const before = readFileSync(join(dir, MANIFEST), "utf8");
    expect(before).toStartWith(`version 1.0.0\nplatform ${hostPlatform()}\n`);
    const inode = statSync(join(dir, RUNTIME_NAME)).ino;
    const run = ok(await installSh(["--dir", dir]));
    expect(run.stdout).toContain(`installed ${dir}/${RUNTIME_NAME}`);
    expect(run.stdout).toContain(`Upgraded ${RUNTIME_NAME} 1.0.0 → ${LATEST} in ${dir}\n`);
    expect(runInstalled(RUNTIME_NAME)).toStartWith(`${RUNTIME_NAME} ${LATEST} `);
    expect(runInstalled(HELPER_NAME)).toStartWith(`${HELPER_NAME} ${LATEST} `);
    expect(statSync(join(dir, RUNTIME_NAME)).ino).not.toBe(inode);
    expect(readFileSync(join(dir, MANIFEST), "utf8")).toStartWith(`version ${LATEST}\n`);
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, HELPER_NAME, RUNTIME_NAME].sort());
  });

  test("going back to an older version says downgraded X → Y", async () => {
    ok(await installSh(["--dir", dir]));
    const run = ok(await installSh(["--dir", dir, "--version", "1.0.0"]));
    expect(run.stdout).toContain(`Downgraded ${RUNTIME_NAME} ${LATEST} → 1.0.0 in ${dir}\n`);
    expect(runInstalled(RUNTIME_NAME)).toStartWith(`${RUNTIME_NAME} 1.0.0 `);
  });

  test("rerunning the same version downloads only SHA256SUMS and leaves the installed files untouched", async () => {
    ok(await installSh(["--dir", dir]));
    const inodes = [RUNTIME_NAME, HELPER_NAME].map((name) => statSync(join(dir, name)).ino);
    const manifest = readFileSync(join(dir, MANIFEST), "utf8");
    requests.length = 0;
    const run = ok(await installSh(["--dir", dir]));
    expect(requests).toEqual(["/releases/latest/download/SHA256SUMS", `/releases/download/v${LATEST}/SHA256SUMS`]);
    expect(run.stdout).toContain(`${RUNTIME_NAME} ${LATEST} is already installed in ${dir}: nothing to download\n`);
    expect(run.stdout).not.toContain("Downloading");
    // It still checks what is there.
    expect(run.stdout).toContain(`  ${RUNTIME_NAME} ${LATEST} (${hostPlatform()} stand-in)\n`);
    expect(run.stdout).toContain("! stand-in doctor --quiet");
    expect([RUNTIME_NAME, HELPER_NAME].map((name) => statSync(join(dir, name)).ino)).toEqual(inodes);
    expect(readFileSync(join(dir, MANIFEST), "utf8")).toBe(manifest);
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, HELPER_NAME, RUNTIME_NAME].sort());
  });

  test("the same version is downloaded again when an installed file changed, or for another platform", async () => {
    ok(await installSh(["--dir", dir]));
    writeFileSync(join(dir, HELPER_NAME), "#!/bin/sh\necho damaged\n");
    requests.length = 0;
    const repaired = ok(await installSh(["--dir", dir]));
    expect(requests).toContain(`/releases/download/v${LATEST}/${archiveName(LATEST, TARGETS.find((t) => t.platform === hostPlatform())!)}`);
    expect(repaired.stdout).toContain(`${dir}/${RUNTIME_NAME} is already this version`);
    expect(repaired.stdout).toContain(`installed ${dir}/${HELPER_NAME}`);
    expect(repaired.stdout).toContain(`Reinstalled ${RUNTIME_NAME} ${LATEST} in ${dir}\n`);
    expect(runInstalled(HELPER_NAME)).toStartWith(`${HELPER_NAME} ${LATEST} `);
    const other = ok(await installSh(["--dir", dir, "--platform", "linux-x64-musl"]));
    expect(other.stdout).toContain(`installed ${dir}/${RUNTIME_NAME}`);
    expect(runInstalled(RUNTIME_NAME)).toContain("(linux-x64-musl stand-in)");
  });

  test("a runtime that does not run here fails the install (exit 1) and says how to remove it", async () => {
    const run = await installSh(["--dir", dir, "--version", "3.3.3"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `install.sh: error: ${dir}/${RUNTIME_NAME} is installed but does not run on this machine: exec format error (remove it with: sh install.sh --uninstall --dir ${dir})\n`,
    );
    expect(ok(await installSh(["--dir", dir, "--uninstall"])).stdout).toContain(`removed ${dir}/${RUNTIME_NAME}`);
  });

  test("a failing doctor is shown but does not fail the install", async () => {
    const run = ok(await installSh(["--dir", dir], { STANDIN_DOCTOR_EXIT: "1" }));
    expect(run.stdout).toContain(`! stand-in doctor --quiet (release site ${baseUrl})\n  a required check failed (above): fix it before pointing Paseo at this runtime\n`);
  });

  test.skipIf(missingTools("install.test.ts, the progress bar (curl's)", ["curl"]).length > 0)("on a terminal the archive download shows a progress bar", async () => {
    let output = "";
    const proc = Bun.spawn(["/bin/sh", INSTALL_SH, "--dir", dir], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, TMPDIR: scratch, SHELL: "/bin/sh", PASEO_HOST_RUNTIME_BASE_URL: baseUrl },
      terminal: { cols: 100, rows: 30, data: (_terminal, data) => void (output += Buffer.from(data).toString()) },
    });
    await proc.exited;
    proc.terminal?.close();
    expect(proc.exitCode).toBe(0);
    // curl --progress-bar draws "#…#  100.0%" on stderr, after "Downloading <archive>" and before the install.
    const bar = output.indexOf("100.0%");
    expect(bar).toBeGreaterThan(output.indexOf(`Downloading ${RUNTIME_NAME}-${LATEST}`));
    expect(bar).toBeLessThan(output.indexOf(`installed ${dir}/${RUNTIME_NAME}`));
    expect(output.match(/100\.0%/g)).toHaveLength(1); // SHA256SUMS is fetched without one
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
    expect(existsSync(dir)).toBe(false);
  });

  test("a release built with --no-helper installs the runtime alone and says how to add the helper", async () => {
    const run = ok(await installSh(["--dir", dir, "--version", "2.0.0"]));
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, RUNTIME_NAME].sort());
    expect(run.stdout).toContain(`Note: there is no ${HELPER_NAME} in ${dir} (this release ships without it).\n`);
    // The way to add it names this mirror (to the script too) and this version, never GitHub's releases;
    // and not npm, where Paseo has not published the helper: its file from Paseo's repository instead.
    const again = `curl -fsSL ${baseUrl}/download/v2.0.0/install.sh | PASEO_HOST_RUNTIME_BASE_URL=${baseUrl} sh -s -- --version 2.0.0 --dir ${dir}`;
    expect(run.stdout).toContain(`\n  ${again} --helper-from HELPER_FILE --helper-sha256 HEX\n`);
    expect(run.stdout).toContain("Paseo has not published @getpaseo/workspace-helper on npm yet");
    expect(run.stdout).toContain("https://github.com/getpaseo/paseo (packages/workspace-helper/src/executable.mjs)");
    expect(run.stdout).not.toContain("--helper-npm");
    expect(run.stdout).not.toContain("github.com/getpaseo/paseo-host-runtime");
    expect(run.stdout).toContain("helperPath");
    expect(readFileSync(join(dir, MANIFEST), "utf8")).toContain(`\nbase ${baseUrl}\n`);
    expect(readFileSync(join(dir, MANIFEST), "utf8")).not.toContain(HELPER_NAME);
  });
});

describe.skipIf(noDownloader)("the helper (--helper-from)", () => {
  /** The --no-helper release with the helper from `source`. */
  const withHelper = (...args: string[]) => installSh(["--dir", dir, "--version", "2.0.0", "--helper-from", ...args]);

  test("a local file with the right --helper-sha256 is installed beside the runtime, recorded, and uninstalled", async () => {
    const source = join(sandbox, "downloads", "helper-from-paseo");
    mkdirSync(join(sandbox, "downloads"));
    writeFileSync(source, PASEO_HELPER);
    const run = ok(await withHelper(source, "--helper-sha256", PASEO_HELPER_SHA256.toUpperCase()));
    expect(run.stdout).toContain(`  verified ${HELPER_NAME} (SHA-256 ${PASEO_HELPER_SHA256})\n`);
    expect(run.stdout).toContain(`installed ${dir}/${HELPER_NAME}`);
    expect(run.stdout).not.toContain("Note:");
    expect(readFileSync(join(dir, HELPER_NAME))).toEqual(PASEO_HELPER);
    expect(statSync(join(dir, HELPER_NAME)).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(dir, MANIFEST), "utf8")).toContain(`file ${PASEO_HELPER_SHA256} ${HELPER_NAME}\n`);
    ok(await installSh(["--dir", dir, "--uninstall"]));
    expect(existsSync(dir)).toBe(false);
  });

  test("a wrong digest installs nothing, and leaves an existing installation as it was", async () => {
    const source = join(sandbox, HELPER_NAME);
    writeFileSync(source, PASEO_HELPER);
    const wrong = "ab".repeat(32);
    const fresh = await withHelper(source, "--helper-sha256", wrong);
    expect(fresh.code).toBe(1);
    expect(fresh.stderr).toBe(`install.sh: error: checksum mismatch for ${source} (expected ${wrong}, got ${PASEO_HELPER_SHA256}): nothing installed\n`);
    expect(existsSync(dir)).toBe(false);
    ok(await installSh(["--dir", dir, "--version", "1.0.0"]));
    const before = readdirSync(dir).map((name) => [name, readFileSync(join(dir, name), "utf8")]);
    expect((await installSh(["--dir", dir, "--helper-from", source, "--helper-sha256", wrong])).code).toBe(1);
    expect(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name), "utf8")])).toEqual(before);
  });

  test("a URL is verified against the SHA256SUMS beside it, and replaces the release's own helper", async () => {
    const run = ok(await installSh(["--dir", dir, "--helper-from", `${baseUrl.replace("/releases", "/paseo")}/v9.0.0/${HELPER_NAME}`]));
    expect(requests).toContain(`/paseo/v9.0.0/SHA256SUMS`);
    expect(run.stdout).toContain(`verified ${HELPER_NAME} (SHA-256 ${PASEO_HELPER_SHA256})`);
    expect(readFileSync(join(dir, HELPER_NAME))).toEqual(PASEO_HELPER);
    expect(runInstalled(RUNTIME_NAME)).toStartWith(`${RUNTIME_NAME} ${LATEST} `);
  });

  test("with no digest to check against, nothing is installed", async () => {
    const url = `${baseUrl.replace("/releases", "/paseo")}/bare/${HELPER_NAME}`;
    const remote = await installSh(["--dir", dir, "--helper-from", url]);
    expect(remote.code).toBe(1);
    expect(remote.stderr).toContain(`cannot verify ${url}: no --helper-sha256 given and no ${baseUrl.replace("/releases", "/paseo")}/bare/SHA256SUMS listing ${HELPER_NAME}`);
    expect(remote.stderr).toEndWith(": nothing installed\n");
    const local = join(sandbox, HELPER_NAME);
    writeFileSync(local, PASEO_HELPER);
    expect((await withHelper(local)).stderr).toContain(`cannot verify ${local}: no --helper-sha256 given and no ${sandbox}/SHA256SUMS listing ${HELPER_NAME}`);
    expect(existsSync(dir)).toBe(false);
  });

  test("on a rerun of the same version only the helper is added, without downloading the archive", async () => {
    ok(await installSh(["--dir", dir, "--version", "2.0.0"]));
    const source = join(sandbox, HELPER_NAME);
    writeFileSync(source, PASEO_HELPER);
    requests.length = 0;
    const run = ok(await withHelper(source, "--helper-sha256", PASEO_HELPER_SHA256));
    expect(requests).toEqual(["/releases/download/v2.0.0/SHA256SUMS"]);
    expect(run.stdout).toContain("is already installed");
    expect(run.stdout).toContain(`installed ${dir}/${HELPER_NAME}`);
    expect(readFileSync(join(dir, MANIFEST), "utf8")).toMatch(new RegExp(`^file [0-9a-f]{64} ${RUNTIME_NAME}\nfile ${PASEO_HELPER_SHA256} ${HELPER_NAME}\n`, "m"));
  });

  test("a file execve cannot run under the helper's name (JavaScript without #!) is refused", async () => {
    const source = join(sandbox, "helper.mjs");
    writeFileSync(source, "console.log('{}')\n");
    const digest = new Bun.CryptoHasher("sha256").update("console.log('{}')\n").digest("hex");
    const run = await withHelper(source, "--helper-sha256", digest);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${source} is neither a #! script, an executable nor an npm tarball (a JavaScript helper needs a '#!/usr/bin/env node' first line): nothing installed`);
    expect(existsSync(dir)).toBe(false);
  });
});

describe.skipIf(noDownloader)("verification", () => {
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

  test("a version that does not exist: no release X at the site, the URL it tried, and where the site comes from; one line", async () => {
    const run = await installSh(["--dir", dir, "--version", "9.9.9"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toStartWith(`install.sh: error: no release 9.9.9 at ${baseUrl} (downloading ${baseUrl}/download/v9.9.9/SHA256SUMS failed: `);
    expect(run.stderr).toEndWith(`). Releases come from ${baseUrl} (PASEO_HOST_RUNTIME_BASE_URL)\n`);
    expect(run.stderr.split("\n")).toHaveLength(2);
    expect(existsSync(dir)).toBe(false);
  });

  const needed = ["awk", "basename", "cat", "chmod", "cmp", "cp", "cut", "dirname", "grep", "gzip", "id", "ldd", "mkdir", "mktemp", "mv", "od", "rm", "rmdir", "sed", "tar", "tr", "uname", "wget", "shasum", "perl"];
  test.skipIf(missingTools("install.test.ts, install with wget and shasum alone", needed).length > 0)("it works with wget and shasum alone (no curl, no sha256sum)", async () => {
    const tools = join(sandbox, "tools");
    mkdirSync(tools);
    for (const name of needed) symlinkSync(Bun.which(name)!, join(tools, name));
    const run = ok(await installSh(["--dir", dir], { PATH: tools }));
    expect(run.stdout).toContain(`Installing ${RUNTIME_NAME} ${LATEST}`);
    expect(runInstalled(RUNTIME_NAME)).toStartWith(`${RUNTIME_NAME} ${LATEST} `);
    expect(ok(await installSh(["--dir", dir, "--uninstall"], { PATH: tools })).stdout).toContain("Uninstalled");
    expect(existsSync(dir)).toBe(false);
  });
});

/** A command line as a person pastes it: /bin/sh -c, with only PATH, HOME and TMPDIR (no mirror named), and `extra`. */
async function pasted(line: string, extra: Record<string, string> = {}): Promise<Run> {
  const proc = Bun.spawn(["/bin/sh", "-c", line], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, TMPDIR: scratch, SHELL: "/bin/sh", ...extra }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code: await proc.exited, stdout, stderr };
}

describe.skipIf(noDownloader)("the README's quick start", () => {
  test("its install and doctor lines work as written, the release site being this test's stand-in for GitHub's", async () => {
    const readme = readFileSync(join(import.meta.dir, "..", "README.md"), "utf8");
    const block = /## Quick start\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)![1]!.trim().split("\n");
    expect(block).toHaveLength(3);
    expect(block[0]).toBe("git clone --depth 1 https://github.com/getpaseo/paseo ~/paseo");
    // What that clone holds of the helper: its one file (a stand-in here: nothing reaches GitHub).
    mkdirSync(join(home, "paseo", "packages", "workspace-helper", "src"), { recursive: true });
    writeFileSync(join(home, "paseo", "packages", "workspace-helper", "src", "executable.mjs"), PASEO_HELPER);
    const site = "https://github.com/getpaseo/paseo-host-runtime/releases";
    expect(block[1]).toContain(site);
    // A user's default directory (~/.local/bin) named for the installer, so that a run as root never writes /usr/local/bin.
    const shell = (line: string) => pasted(line, { PASEO_HOST_RUNTIME_BASE_URL: baseUrl, PASEO_HOST_RUNTIME_INSTALL: join(home, ".local", "bin") });
    const installed = await shell(block[1]!.replace(site, baseUrl));
    expect(installed.stderr).toBe("");
    expect(installed.code).toBe(0);
    const bin = join(home, ".local", "bin");
    expect(readFileSync(join(bin, HELPER_NAME))).toEqual(PASEO_HELPER);
    const doctor = await shell(block[2]!);
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toContain("stand-in doctor");
  });
});

describe.skipIf(noDownloader)("installed from a mirror", () => {
  for (const kind of ["http", "file"] as const) {
    test(`a ${kind}:// mirror: the fix line after the install names it, and works pasted; a rerun uses the recorded site`, async () => {
      const site = kind === "http" ? baseUrl : `file://${root}`;
      const first = ok(await installSh(["--dir", dir, "--version", "2.0.0"], { PASEO_HOST_RUNTIME_BASE_URL: site }));
      expect(first.stdout).toContain(`  releases from ${site} (PASEO_HOST_RUNTIME_BASE_URL)\n`);
      // The release ships no helper: the note's line runs this installer again, from the mirror, whose install.sh defaults to the public site.
      const again = `curl -fsSL ${site}/download/v2.0.0/install.sh | PASEO_HOST_RUNTIME_BASE_URL=${site} sh -s -- --version 2.0.0 --dir ${dir}`;
      expect(first.stdout).toContain(`\n  ${again} --helper-from HELPER_FILE --helper-sha256 HEX\n`);
      const helper = join(root, "paseo", "v9.0.0", HELPER_NAME);
      const fixed = await pasted(`${again} --helper-from ${helper} --helper-sha256 ${PASEO_HELPER_SHA256}`);
      expect(fixed.stderr).toBe("");
      expect(fixed.code).toBe(0);
      expect(readFileSync(join(dir, HELPER_NAME))).toEqual(PASEO_HELPER);
      // With no PASEO_HOST_RUNTIME_BASE_URL, an upgrade of DIR comes from the site its install recorded, and says so.
      const rerun = ok(await installSh(["--dir", dir, "--version", "1.0.0"], { PASEO_HOST_RUNTIME_BASE_URL: "" }));
      expect(rerun.stdout).toContain(`  releases from ${site} (recorded by the install in ${dir}; PASEO_HOST_RUNTIME_BASE_URL chooses another)\n`);
      expect(runInstalled(RUNTIME_NAME)).toStartWith(`${RUNTIME_NAME} 1.0.0 `);
    });
  }
});

/** A Paseo daemon installed with npm, as docs/helper-install.md assumes: its `paseo` bin, and the helper package among its dependencies. */
function fakeDaemonInstall(prefix: string): { helper: string; text: string } {
  const cli = join(prefix, "lib", "node_modules", "@getpaseo", "cli");
  const pkg = join(cli, "node_modules", "@getpaseo", "workspace-helper");
  mkdirSync(join(cli, "dist"), { recursive: true });
  mkdirSync(join(pkg, "dist"), { recursive: true });
  mkdirSync(join(prefix, "bin"));
  writeFileSync(join(cli, "package.json"), JSON.stringify({ name: "@getpaseo/cli", version: "0.9.0", bin: { paseo: "dist/cli.js" } }));
  writeFileSync(join(cli, "dist", "cli.js"), "#!/usr/bin/env node\n", { mode: 0o755 });
  symlinkSync("../lib/node_modules/@getpaseo/cli/dist/cli.js", join(prefix, "bin", "paseo"));
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "@getpaseo/workspace-helper", version: "0.4.0", type: "module", bin: { "paseo-workspace-helper": "./dist/executable.mjs" } }));
  const text = `#!/usr/bin/env node\nif (process.argv[2] === "describe") console.log(JSON.stringify({ version: 1, capabilities: ["files", "watch", "resolve-command"] }));\n`;
  writeFileSync(join(pkg, "dist", "executable.mjs"), text, { mode: 0o755 });
  return { helper: join(pkg, "dist", "executable.mjs"), text };
}

/** The runtime's doctor (--json), as the daemon's user would run it: its helper check. */
function helperCheck(binary: string, env: Record<string, string>, extra: string[] = []): { status: string; detail: string; hint?: string; alternatives?: string[] } {
  const run = Bun.spawnSync([binary, "doctor", "--home", join(sandbox, "runtime-home"), "--json", ...extra], { env: { HOME: home, TMPDIR: sandbox, ...env } });
  return (JSON.parse(run.stdout.toString()) as { checks: { name: string; status: string; detail: string; hint?: string; alternatives?: string[] }[] }).checks.find((c) => c.name === "workspace helper")!;
}

describe.skipIf(noDownloader)("doctor's way to the helper, when it finds none", () => {
  test("the helper of the Paseo daemon installed here: the fix line installs a copy, pasted as printed, and describe answers through it", async () => {
    const prefix = join(sandbox, "npm-prefix");
    const daemon = fakeDaemonInstall(prefix);
    // A runtime installed by hand in a directory of its own, with no helper beside it.
    const rt = join(sandbox, "rt");
    mkdirSync(rt);
    copyFileSync(BIN, join(rt, RUNTIME_NAME));
    chmodSync(join(rt, RUNTIME_NAME), 0o755);
    const check = helperCheck(join(rt, RUNTIME_NAME), { PATH: `${join(prefix, "bin")}:${process.env.PATH}`, PASEO_HOST_RUNTIME_BASE_URL: baseUrl });
    expect(check.status).toBe("warn");
    const digest = new Bun.CryptoHasher("sha256").update(daemon.text).digest("hex");
    const release = RELEASE_VERSION_PATTERN.test(BIN_VERSION);
    const script = release ? `${baseUrl}/download/v${BIN_VERSION}/install.sh` : `${baseUrl}/latest/download/install.sh`;
    const line = `curl -fsSL ${script} | PASEO_HOST_RUNTIME_BASE_URL=${baseUrl} sh -s -- ${release ? `--version ${BIN_VERSION} ` : ""}--dir ${rt} --helper-from ${daemon.helper} --helper-sha256 ${digest}`;
    expect(check.hint).toBe(`${line}   # a copy of the helper of the Paseo daemon installed here (@getpaseo/workspace-helper 0.4.0, from the Paseo daemon's installation (${join(prefix, "bin", "paseo")} → ${join(prefix, "lib", "node_modules", "@getpaseo", "cli", "dist", "cli.js")}))`);
    expect(check.alternatives).toEqual([`# set "helperPath": ${JSON.stringify(daemon.helper)} in the runtime's options in Paseo's config.json: the daemon's own helper, upgraded with it`]);
    expect(JSON.stringify(check)).not.toContain("--helper-npm");
    // Pasted (a shell that names no mirror): the helper beside the runtime is the daemon's, and the runtime runs it.
    const fixed = await pasted(check.hint!);
    expect(fixed.stderr).toBe("");
    expect(fixed.code).toBe(0);
    expect(readFileSync(join(rt, HELPER_NAME), "utf8")).toBe(daemon.text);
    const copied = helperCheck(BIN, { PATH: process.env.PATH! }, ["--helper-path", join(rt, HELPER_NAME)]);
    expect(copied.status).toBe("ok");
    expect(copied.detail).toContain("describe through exec: capabilities files, watch, resolve-command");
    // The alternative, helperPath at the daemon's own helper, works as well.
    expect(helperCheck(BIN, { PATH: process.env.PATH! }, ["--helper-path", daemon.helper]).status).toBe("ok");
  });

  test("PASEO_DAEMON_INSTALL names an installation that is not on PATH; with none, the helper's file from a Paseo checkout, never npm", () => {
    const prefix = join(sandbox, "elsewhere");
    const daemon = fakeDaemonInstall(prefix);
    const named = helperCheck(BIN, { PATH: process.env.PATH!, PASEO_DAEMON_INSTALL: join(prefix, "lib", "node_modules", "@getpaseo", "cli") });
    expect(named.hint).toContain(` --helper-from ${daemon.helper} --helper-sha256 `);
    expect(named.hint).toContain(`from PASEO_DAEMON_INSTALL (${join(prefix, "lib", "node_modules", "@getpaseo", "cli")})`);
    mkdirSync(join(sandbox, "no-daemon"));
    const none = helperCheck(BIN, { PATH: process.env.PATH!, PASEO_DAEMON_INSTALL: join(sandbox, "no-daemon") });
    expect(none.hint).toContain(" --helper-from PASEO_CHECKOUT/packages/workspace-helper/src/executable.mjs --helper-sha256 HEX   # the helper's one file, from a checkout of github.com/getpaseo/paseo (HEX: its sha256sum); not on npm yet: docs/helper-install.md");
    expect(JSON.stringify(none)).not.toContain("--helper-npm");
  });
});

describe.skipIf(noDownloader)("platform detection", () => {
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

  test.skipIf(linuxOnly("install.test.ts, -baseline detection", "/proc/cpuinfo"))("x64 Linux gets -baseline exactly when /proc/cpuinfo lacks avx2, and -musl under musl", async () => {
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

describe.skipIf(noDownloader)("directory and PATH", () => {
  const isRoot = process.getuid?.() === 0;
  test.skipIf(withoutRoot("install.test.ts, root's default directory", "its default is root's"))("as root the default directory is /usr/local/bin", async () => {
    // Only the announced directory is checked; the download fails before anything is written.
    const asRoot = await installSh([], { PASEO_HOST_RUNTIME_BASE_URL: `${baseUrl}/missing` });
    expect(asRoot.stdout).toContain("directory /usr/local/bin");
    expect(asRoot.code).toBe(1);
  });

  // Run as root, the user is nobody (through setpriv), with a HOME it can write.
  const noUser = isRoot && missingTools("install.test.ts, the default directory of a user other than root", ["setpriv"]).length > 0;
  test.skipIf(noUser)("as a user the default directory is ~/.local/bin", async () => {
    if (isRoot) {
      chmodSync(sandbox, 0o755);
      chmodSync(home, 0o777);
      chmodSync(scratch, 0o777);
    }
    const asUser = await installSh([], {}, isRoot ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []);
    expect(asUser.stderr).toBe("");
    expect(asUser.code).toBe(0);
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

  test("--uninstall with two install directories removes only its own directory's PATH line", async () => {
    const bashrc = join(home, ".bashrc");
    const other = join(sandbox, "other-bin");
    const line = (d: string) => `export PATH="${d}:$PATH" # added by paseo-host-runtime install.sh`;
    ok(await installSh(["--dir", dir, "--modify-path"], { SHELL: "/bin/bash" }));
    ok(await installSh(["--dir", other, "--modify-path"], { SHELL: "/bin/bash" }));
    expect(readFileSync(bashrc, "utf8")).toBe(`${line(dir)}\n${line(other)}\n`);
    const run = ok(await installSh(["--dir", dir, "--uninstall"]));
    expect(run.stdout).toContain(`removed the PATH line for ${dir} from ${bashrc}`);
    expect(readFileSync(bashrc, "utf8")).toBe(`${line(other)}\n`);
    expect(readdirSync(other).sort()).toEqual([MANIFEST, HELPER_NAME, RUNTIME_NAME].sort());
    ok(await installSh(["--dir", other, "--uninstall"]));
    expect(readFileSync(bashrc, "utf8")).toBe("");
  });

  test("--uninstall says where the runtime home is, that it is kept, and how to remove it", async () => {
    ok(await installSh(["--dir", dir]));
    const state = join(home, ".local", "state", RUNTIME_NAME);
    mkdirSync(state, { recursive: true });
    const run = ok(await installSh(["--dir", dir, "--uninstall"]));
    expect(run.stdout).toContain(`The runtime home (workspaces, state.sqlite) is left alone. With the default options it is\n  ${state}\n`);
    expect(run.stdout).toContain(`rm -rf '${state}'`);
    expect(existsSync(state)).toBe(true);
    // PASEO_HOST_RUNTIME_HOME wins, as in the runtime; a missing home is said to be missing.
    ok(await installSh(["--dir", dir]));
    const custom = join(sandbox, "it's home");
    const moved = ok(await installSh(["--dir", dir, "--uninstall"], { PASEO_HOST_RUNTIME_HOME: custom }));
    expect(moved.stdout).toContain(`  ${custom} (does not exist)\n`);
    expect(moved.stdout).toContain(`rm -rf '${join(sandbox, "it'\\''s home")}'`);
  });

  test("--uninstall stops while the home the daemon's config uses holds workspaces, naming each with its rm; then removes the directory it made", async () => {
    ok(await installSh(["--dir", dir]));
    const state = join(sandbox, "daemon-home");
    const config = join(home, ".paseo", "config.json");
    mkdirSync(join(home, ".paseo"));
    writeFileSync(config, JSON.stringify({ workspaceRuntimes: { host: { type: "command", command: [join(dir, RUNTIME_NAME)], options: { stateDirectory: state } } } }));
    const repo = oneCommitRepo(join(sandbox, "repo"));
    const runtime = (args: string[]) => Bun.spawnSync([BIN, ...args], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home } });
    expect(runtime(["new", "-w", "wt", "--source", repo, "--branch", "try", "--base", "main", "--home", state]).exitCode).toBe(0);
    const refused = await installSh(["--dir", dir, "--uninstall"], { STANDIN_HOMES: "1" });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`  ${state}: 1 workspace(s) (runtime host of ${config}, running ${join(dir, RUNTIME_NAME)})\n`);
    const removeLine = `${BIN} rm -w wt --home ${state} --owner default --force`;
    expect(refused.stderr).toContain(`      wt (owner default): a worktree registered in ${repo}; remove: ${removeLine}\n`);
    expect(refused.stderr).toContain(`install.sh: error: not uninstalled: the runtime homes above still hold 1 workspace(s)`);
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, HELPER_NAME, RUNTIME_NAME].sort());
    // The line it names removes the workspace and its worktree; then the uninstall goes through, and DIR (which it made) goes too.
    expect(runtime(removeLine.split(" ").slice(1)).exitCode).toBe(0);
    expect(worktrees(repo)).toEqual([repo]);
    const run = ok(await installSh(["--dir", dir, "--uninstall"], { STANDIN_HOMES: "1" }));
    expect(run.stdout).toContain(`  removed ${dir} (this installer made it)\n`);
    expect(run.stdout).toContain(`The runtime homes are left alone:\n  ${state}: no workspaces (runtime host of ${config}, running ${join(dir, RUNTIME_NAME)})\n`);
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(state)).toBe(true);
  });

  test("--uninstall --keep-workspaces uninstalls anyway and shows what is left; a directory it did not make is kept", async () => {
    mkdirSync(dir);
    ok(await installSh(["--dir", dir]));
    const adopted = join(sandbox, "adopted");
    mkdirSync(adopted);
    expect(Bun.spawnSync([BIN, "new", "-w", "a", "--source", adopted], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home } }).exitCode).toBe(0);
    const run = ok(await installSh(["--dir", dir, "--uninstall", "--keep-workspaces"], { STANDIN_HOMES: "1" }));
    const state = join(home, ".local", "state", RUNTIME_NAME);
    expect(run.stdout).toContain(`The runtime homes are left alone:\n  ${state}: 1 workspace(s) (the default home)\n      a (owner default): adopts ${adopted}; remove: `);
    expect(readdirSync(dir)).toEqual([]);
  });

  test("--uninstall stops while `homes` cannot tell every home (a config.json it cannot parse, a relative PASEO_HOST_RUNTIME_HOME), still showing the homes it could", async () => {
    ok(await installSh(["--dir", dir]));
    const adopted = join(sandbox, "adopted");
    mkdirSync(adopted);
    expect(Bun.spawnSync([BIN, "new", "-w", "a", "--source", adopted], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home } }).exitCode).toBe(0);
    const config = join(home, ".paseo", "config.json");
    mkdirSync(join(home, ".paseo"));
    writeFileSync(config, "{ not json");
    const state = join(home, ".local", "state", RUNTIME_NAME);
    const refused = await installSh(["--dir", dir, "--uninstall"], { STANDIN_HOMES: "1" });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`  ${state}: 1 workspace(s) (the default home)\n      a (owner default): adopts ${adopted}; remove: `);
    expect(refused.stderr).toContain(`  the homes of the daemon's runtimes are not listed: ${config} is not valid JSON`);
    expect(refused.stderr).toContain(`install.sh: error: not uninstalled: ${dir}/${RUNTIME_NAME} homes could not tell every runtime home (above)`);
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, HELPER_NAME, RUNTIME_NAME].sort());
    // No config, but a home setting the runtime refuses: `homes` shows nothing but why, and the uninstall still stops.
    rmSync(config);
    const relative = await installSh(["--dir", dir, "--uninstall"], { STANDIN_HOMES: "1", PASEO_HOST_RUNTIME_HOME: "relative/home" });
    expect(relative.code).toBe(1);
    expect(relative.stderr).toContain(`PASEO_HOST_RUNTIME_HOME must be an absolute path, got "relative/home"`);
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, HELPER_NAME, RUNTIME_NAME].sort());
    const kept = ok(await installSh(["--dir", dir, "--uninstall", "--keep-workspaces"], { STANDIN_HOMES: "1", PASEO_HOST_RUNTIME_HOME: "relative/home" }));
    expect(kept.stdout).toContain(`Uninstalled ${RUNTIME_NAME} from ${dir}`);
    expect(existsSync(join(dir, RUNTIME_NAME))).toBe(false);
  });

  test("--help describes every option; a bad command line exits 2 with the usage, changing nothing", async () => {
    const help = ok(await installSh(["--help"]));
    for (const option of ["--version", "--dir", "--platform", "--modify-path", "--uninstall", "--keep-workspaces", "--helper-npm", "--helper-from", "--helper-sha256", "PASEO_HOST_RUNTIME_BASE_URL"]) {
      expect(help.stdout).toContain(option);
    }
    const cases: [string[], string][] = [
      [["--frobnicate"], "unknown option: --frobnicate"],
      [["-x"], "unknown option: -x"],
      [["--dir"], "--dir needs a value"],
      [["--version", "1.0.0;rm"], "not a version: 1.0.0;rm"],
      [["--helper-sha256", PASEO_HELPER_SHA256], "--helper-sha256 goes with --helper-from"],
      [["--helper-from", "x", "--helper-sha256", "abc"], "--helper-sha256 must be 64 hexadecimal digits"],
      [["--uninstall", "--helper-from", "x"], "--uninstall takes only --dir and --keep-workspaces"],
      [["--uninstall", "--helper-npm"], "--uninstall takes only --dir and --keep-workspaces"],
      [["--keep-workspaces"], "--keep-workspaces goes with --uninstall"],
      [["--helper-npm", "--helper-from", "x"], "give either --helper-npm or --helper-from, not both"],
      [["--helper-npm", "1.0;rm"], "--helper-npm: not an npm version or tag: 1.0;rm"],
      [["--helper-npm="], "--helper-npm takes a version or tag, or nothing"],
    ];
    for (const [args, message] of cases) {
      const bad = await installSh(["--dir", dir, ...args]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toBe(`install.sh: error: ${message}\n\n${help.stdout}`);
      expect(bad.stdout).toBe("");
    }
    expect(requests).toEqual([]);
    expect(existsSync(dir)).toBe(false);
  });
});

/** npm installs take a second or two each, several on a loaded machine. */
const NPM_TIMEOUT_MS = 60_000;
const noNpm = noDownloader || missingTools("install.test.ts, the helper from npm", ["npm"]).length > 0;

describe.skipIf(noNpm)("the helper from npm (--helper-npm, or its tarball as --helper-from)", () => {
  let registry: NpmRegistry;
  let packages: Scratch;
  /** The stand-in's postinstall script would create this file. */
  let marker: string;
  const tarballs: Record<string, Uint8Array> = {};
  const digest = (data: Uint8Array) => new Bun.CryptoHasher("sha256").update(data).digest("hex");

  beforeAll(() => {
    packages = tempDir("phr-install-npm-");
    marker = join(packages.path, "postinstall-ran");
    const [old, latest, corrupt] = ["1.2.3", "1.3.0", "1.4.0-rc.1"].map((version) => helperStandIn(version, marker));
    registry = startRegistry([helperDependency(), old!, corrupt!, latest!], [corrupt!]);
    tarballs.helper = old!.tarball;
    tarballs.other = pack({ name: "not-the-helper", version: "1.0.0", bin: { "paseo-workspace-helper": "x.mjs" } }, { "x.mjs": "#!/usr/bin/env node\n" }).tarball;
  });
  afterAll(() => {
    registry?.stop();
    packages?.cleanup();
  });
  beforeEach(() => (registry.requests.length = 0));

  /**
   * install.sh with the stand-in registry as npm's (the way an operator's mirror is configured);
   * no retries: npm fetches a tarball that fails its integrity check four more times, minutes apart.
   */
  const npmInstall = (args: string[], env: Record<string, string> = {}) =>
    installSh(["--dir", dir, ...args], { npm_config_registry: registry.url, npm_config_fetch_retries: "0", ...env });
  const prefixes = () => readdirSync(dir).filter((name) => name.startsWith(".paseo-workspace-helper.npm."));
  /** What the helper beside the runtime prints, run the way the runtime runs a JavaScript helper. */
  const helperSays = (...args: string[]) =>
    Bun.spawnSync([BIN, "--no-env-file", "--config=/dev/null", "--no-install", join(dir, HELPER_NAME), ...args], { env: { BUN_BE_BUN: "1" } }).stdout.toString().trim();

  test("--helper-npm VERSION: npm installs the package and its dependency into a private prefix; the helper is a symlink into its bin; no script ran; --uninstall removes both", async () => {
    const run = ok(await npmInstall(["--version", "2.0.0", "--helper-npm", "1.2.3"]));
    expect(run.stdout).toContain(`Installing ${HELPER_PACKAGE}@1.2.3 with npm `);
    expect(run.stdout).toContain(`(registry ${registry.url}) into a private prefix\n`);
    expect(run.stdout).toContain(`npm installed ${HELPER_PACKAGE} 1.2.3 and its dependencies, each checked against its integrity hash\n`);
    expect(run.stdout).not.toContain("Note:");
    expect(registry.requests).toEqual(expect.arrayContaining([`/${HELPER_PACKAGE}`, "/paseo-helper-standin-capabilities", `/-/@getpaseo-workspace-helper-1.2.3.tgz`]));
    // The shape npm makes, beside the runtime: DIR/helper → PREFIX/node_modules/.bin/helper → the package's dist/executable.mjs.
    const [prefix] = prefixes();
    expect(readdirSync(dir).sort()).toEqual([MANIFEST, prefix!, HELPER_NAME, RUNTIME_NAME].sort());
    expect(readlinkSync(join(dir, HELPER_NAME))).toBe(`${prefix}/node_modules/.bin/${HELPER_NAME}`);
    expect(realpathSync(join(dir, HELPER_NAME))).toBe(join(dir, prefix!, "node_modules", HELPER_PACKAGE, "dist", "executable.mjs"));
    expect(run.stdout).toContain(`installed ${dir}/${HELPER_NAME} -> ${prefix}/node_modules/.bin/${HELPER_NAME} (${HELPER_PACKAGE} 1.2.3)\n`);
    // Readable by a daemon of another user, writable only by the installer.
    expect(statSync(join(dir, prefix!)).mode & 0o777).toBe(0o755);
    expect(statSync(join(dir, prefix!, "node_modules", HELPER_PACKAGE, "package.json")).mode & 0o777).toBe(0o644);
    expect(existsSync(marker)).toBe(false);
    // It runs on the runtime's engine and finds its dependency; describe answers what the daemon requires.
    expect(helperSays("version")).toBe("stand-in helper 1.2.3 version");
    expect(JSON.parse(helperSays("describe")).capabilities).toEqual(["files", "watch", "resolve-command"]);
    expect(readFileSync(join(dir, MANIFEST), "utf8")).toContain(`\nnpm ${prefix} ${HELPER_NAME}\n`);
    const uninstall = ok(await installSh(["--dir", dir, "--uninstall"]));
    expect(uninstall.stdout).toContain(`removed ${dir}/${HELPER_NAME}\n`);
    expect(uninstall.stdout).toContain(`removed ${dir}/${prefix} (an npm prefix of ${HELPER_NAME})\n`);
    expect(existsSync(dir)).toBe(false);
  }, NPM_TIMEOUT_MS);

  test("the runtime's doctor finds the npm-installed helper and its describe passes through exec", async () => {
    ok(await npmInstall(["--version", "2.0.0", "--helper-npm", "1.2.3"]));
    const runtimeHome = join(sandbox, "runtime-home");
    const doctor = Bun.spawnSync([BIN, "doctor", "--home", runtimeHome, "--helper-path", join(dir, HELPER_NAME), "--json"], { env: { ...process.env, TMPDIR: sandbox, HOME: home } });
    const check = (JSON.parse(doctor.stdout.toString()) as { checks: { name: string; status: string; detail: string }[] }).checks.find((c) => c.name === "workspace helper")!;
    expect(check.status).toBe("ok");
    expect(check.detail).toContain("JavaScript run by the embedded engine): describe through exec: capabilities files, watch, resolve-command");
  }, NPM_TIMEOUT_MS);

  test("without a version: the latest; the same packages again are left in place; another version replaces the prefix; a release's own helper replaces the link", async () => {
    const first = ok(await npmInstall(["--version", "2.0.0", "--helper-npm"]));
    expect(first.stdout).toContain(`Installing ${HELPER_PACKAGE}@latest with npm`);
    expect(helperSays()).toBe("stand-in helper 1.3.0");
    const [prefix] = prefixes();
    const again = ok(await npmInstall(["--version", "2.0.0", "--helper-npm", "1.3.0"]));
    expect(again.stdout).toContain(`${dir}/${HELPER_NAME} is already ${HELPER_PACKAGE} 1.3.0 (the same packages)\n`);
    expect(prefixes()).toEqual([prefix!]);
    const older = ok(await npmInstall(["--version", "2.0.0", "--helper-npm", "1.2.3"]));
    expect(older.stdout).toContain(`removed ${dir}/${prefix} (an npm prefix of ${HELPER_NAME})`);
    const [next] = prefixes();
    expect(next).not.toBe(prefix);
    expect(helperSays()).toBe("stand-in helper 1.2.3");
    // Installing the runtime alone keeps the npm helper.
    ok(await npmInstall(["--version", "2.0.0"]));
    expect(prefixes()).toEqual([next!]);
    expect(helperSays()).toBe("stand-in helper 1.2.3");
    // A release that ships a helper file: it replaces the link, and the prefix goes.
    ok(await npmInstall(["--version", "1.0.0"]));
    expect(prefixes()).toEqual([]);
    expect(runInstalled(HELPER_NAME)).toStartWith(`${HELPER_NAME} 1.0.0 `);
    expect(readFileSync(join(dir, MANIFEST), "utf8")).not.toContain("\nnpm ");
  }, NPM_TIMEOUT_MS);

  test("--helper-npm while the registry has no such package (404, as today): says Paseo has not published it and what to use instead; nothing installed", async () => {
    const empty = startRegistry([helperDependency()], []);
    try {
      const run = await installSh(["--dir", dir, "--version", "2.0.0", "--helper-npm"], { npm_config_registry: empty.url, npm_config_fetch_retries: "0" });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("E404");
      expect(run.stderr).toContain(
        `install.sh: error: ${HELPER_PACKAGE} is not on the npm registry (${empty.url}): Paseo has not published it yet, nothing installed. Install the helper with --helper-from instead: the helper of a Paseo daemon installed on this machine (its doctor names it), or packages/workspace-helper/src/executable.mjs from a checkout of https://github.com/getpaseo/paseo, with --helper-sha256 HEX (docs/helper-install.md)\n`,
      );
      expect(existsSync(dir)).toBe(false);
    } finally {
      empty.stop();
    }
  }, NPM_TIMEOUT_MS);

  test("a package whose tarball does not match the registry's integrity is refused by npm: nothing installed, an installation left as it was", async () => {
    const fresh = await npmInstall(["--version", "2.0.0", "--helper-npm", "1.4.0-rc.1"]);
    expect(fresh.code).toBe(1);
    expect(fresh.stderr).toContain("EINTEGRITY");
    expect(fresh.stderr).toEndWith(`install.sh: error: npm could not install ${HELPER_PACKAGE}@1.4.0-rc.1 (its message is above): nothing installed\n`);
    expect(existsSync(dir)).toBe(false);
    ok(await npmInstall(["--version", "2.0.0", "--helper-npm", "1.2.3"]));
    const before = readdirSync(dir).sort();
    expect((await npmInstall(["--version", "2.0.0", "--helper-npm", "1.4.0-rc.1"])).code).toBe(1);
    expect(readdirSync(dir).sort()).toEqual(before);
    expect(helperSays()).toBe("stand-in helper 1.2.3");
  }, NPM_TIMEOUT_MS);

  test("--helper-from the package's npm tarball: verified by its SHA-256, then installed with npm the same way", async () => {
    const tgz = join(sandbox, "workspace-helper-1.2.3.tgz");
    writeFileSync(tgz, tarballs.helper!);
    const run = ok(await npmInstall(["--version", "2.0.0", "--helper-from", tgz, "--helper-sha256", digest(tarballs.helper!)]));
    expect(run.stdout).toContain(`verified ${tgz} (SHA-256 ${digest(tarballs.helper!)})\n`);
    expect(helperSays()).toBe("stand-in helper 1.2.3");
    expect(existsSync(marker)).toBe(false);
    // Only its dependency came from the registry.
    expect(registry.requests.some((path) => path.includes("workspace-helper"))).toBe(false);
    expect(readlinkSync(join(dir, HELPER_NAME))).toMatch(new RegExp(`^\\.paseo-workspace-helper\\.npm\\.\\d+/node_modules/\\.bin/${HELPER_NAME}$`));
  }, NPM_TIMEOUT_MS);

  test("a tarball with the wrong digest never reaches npm; a tarball of another package is refused", async () => {
    const tgz = join(sandbox, "helper.tgz");
    writeFileSync(tgz, tarballs.helper!);
    const wrong = await npmInstall(["--version", "2.0.0", "--helper-from", tgz, "--helper-sha256", "ab".repeat(32)]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(`checksum mismatch for ${tgz}`);
    expect(wrong.stdout).not.toContain("with npm");
    expect(registry.requests).toEqual([]);
    const other = join(sandbox, "other.tgz");
    writeFileSync(other, tarballs.other!);
    const refused = await npmInstall(["--version", "2.0.0", "--helper-from", other, "--helper-sha256", digest(tarballs.other!)]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toEndWith(`install.sh: error: ${other} is not the package ${HELPER_PACKAGE}: nothing installed\n`);
    expect(existsSync(dir)).toBe(false);
  }, NPM_TIMEOUT_MS);

  const tools = ["awk", "basename", "cat", "chmod", "cmp", "cp", "curl", "cut", "dirname", "grep", "gzip", "id", "ldd", "mkdir", "mktemp", "mv", "od", "rm", "sed", "sha256sum", "tar", "tr", "uname"];
  test.skipIf(missingTools("install.test.ts, --helper-npm without npm", tools).length > 0)("without npm on PATH: says what it needs, nothing installed", async () => {
    const bin = join(sandbox, "no-npm");
    mkdirSync(bin);
    for (const name of tools) symlinkSync(Bun.which(name)!, join(bin, name));
    const run = await npmInstall(["--version", "2.0.0", "--helper-npm"], { PATH: bin });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`install.sh: error: installing ${HELPER_PACKAGE} needs npm on PATH (it comes with Node.js; the package asks for Node >= 20): nothing installed\n`);
    expect(existsSync(dir)).toBe(false);
  }, NPM_TIMEOUT_MS);
});

test.skipIf(missingTools("install.test.ts, shellcheck install.sh", ["shellcheck"]).length > 0)("shellcheck install.sh is clean", () => {
  const run = Bun.spawnSync([Bun.which("shellcheck")!, "--shell=sh", INSTALL_SH]);
  expect(run.stdout.toString() + run.stderr.toString()).toBe("");
  expect(run.exitCode).toBe(0);
});
