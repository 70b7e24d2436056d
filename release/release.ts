#!/usr/bin/env bun
// `npm run release -- --version X.Y.Z (--helper PATH | --no-helper) [--out DIR] [--targets LIST]`
//   compiles one binary per target, packs each into a reproducible .tar.gz, writes SHA256SUMS,
//   and smoke-tests every archive (see release/README.md).
// `npm run release -- --sums DIR`
//   (re)writes DIR/SHA256SUMS over the archives and install.sh found there (the publish step).
import { $ } from "zx";
import { chmodSync, copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { type Entry, writeArchive, writeSums } from "./archive.ts";
import { adHocSign, canCodesign } from "./codesign.ts";
import { ROOT, compile } from "./compile.ts";
import { smokeTest, type SmokeResult } from "./smoke.ts";
import {
  HELPER_NAME,
  MACOS_ONLY,
  RUNTIME_NAME,
  SUMS_NAME,
  TARGETS,
  VERSION_PATTERN,
  archiveName,
  archiveStem,
  compareVersions,
  findTarget,
  type Target,
} from "./targets.ts";

export interface ReleaseOptions {
  version: string;
  /** The helper executable to ship, or null for `--no-helper` (the archive then holds a NOTICE). */
  helper: string | null;
  /** The mirror root: the release goes to `download/vX.Y.Z/`, the newest to `latest/download/`. */
  out: string;
  targets: readonly Target[];
  /** Targets a default release left out on this host, and why (shown in the report). */
  leftOut?: readonly LeftOut[];
  /** Files copied into every archive and beside it; default: the repository's own. */
  license?: string;
  readme?: string;
  installScript?: string;
  /** mtime of every archive member, in seconds; default SOURCE_DATE_EPOCH, else the HEAD commit time. */
  mtime?: number;
  log?: (line: string) => void;
}

export interface LeftOut {
  target: Target;
  reason: string;
}

export interface ReleaseResult {
  /** `OUT/download/vX.Y.Z` when the release passed, else `OUT/failed/vX.Y.Z` (never with SHA256SUMS). */
  dir: string;
  archives: string[];
  /** The SHA256SUMS text, or null when the release failed and none was written. */
  sums: string | null;
  smoke: SmokeResult[];
  report: string;
  ok: boolean;
}

export const NOTICE = `This archive does not contain ${HELPER_NAME}: it was built with --no-helper.

Paseo runs ${HELPER_NAME} inside every workspace: the daemon runs its describe
after every create, then its file, watch and resolve-command calls. It is Paseo's
package @getpaseo/workspace-helper, not on npm yet. Install, verified, the helper
of a Paseo daemon on this machine (${RUNTIME_NAME} doctor prints the line), or its
one file from a checkout of https://github.com/getpaseo/paseo:

  curl -fsSL .../install.sh | sh -s -- --helper-from ~/paseo/packages/workspace-helper/src/executable.mjs --helper-sha256 HEX

or set "helperPath" (an absolute path) in the runtime's options in Paseo's
config.json. docs/helper-install.md has every way.
`;

/** Where a release's files go under the mirror root `out` (GitHub's download URLs). */
export function releaseDir(out: string, version: string): string {
  return join(out, "download", `v${version}`);
}

export function latestDir(out: string): string {
  return join(out, "latest", "download");
}

/** The fixed mtime for archive members: SOURCE_DATE_EPOCH, else the HEAD commit time, else 0. */
export async function sourceDateEpoch(): Promise<number> {
  const fromEnv = process.env.SOURCE_DATE_EPOCH;
  if (fromEnv !== undefined) {
    if (!/^\d+$/.test(fromEnv)) throw new Error(`SOURCE_DATE_EPOCH must be whole seconds, got ${JSON.stringify(fromEnv)}`);
    return Number(fromEnv);
  }
  const git = await $({ quiet: true, nothrow: true, cwd: ROOT })`git log -1 --format=%ct`;
  return git.exitCode === 0 && /^\d+$/.test(git.stdout.trim()) ? Number(git.stdout.trim()) : 0;
}

function requireFile(path: string, what: string): void {
  if (!existsSync(path) || !statSync(path).isFile()) throw new Error(`${what} not found or not a regular file: ${path}`);
}

/** The targets a release builds by default here, and the ones it leaves for macOS. */
export function defaultTargets(canSign: boolean = canCodesign()): { targets: Target[]; leftOut: LeftOut[] } {
  if (canSign) return { targets: [...TARGETS], leftOut: [] };
  return {
    targets: TARGETS.filter((t) => !MACOS_ONLY.has(t.bun)),
    leftOut: TARGETS.filter((t) => MACOS_ONLY.has(t.bun)).map((target) => ({ target, reason: MACOS_ONLY.get(target.bun)! })),
  };
}

/**
 * Compiles and packs one release into a staging directory under `options.out`, then lets
 * finishRelease() test it and put it in place.
 */
export async function buildRelease(options: ReleaseOptions): Promise<ReleaseResult> {
  const log = options.log ?? ((line: string) => console.log(line));
  const { version, helper, targets } = options;
  if (!VERSION_PATTERN.test(version)) throw new Error(`version must look like 1.2.3 or 1.2.3-rc.1, got ${JSON.stringify(version)}`);
  if (targets.length === 0) throw new Error("no targets");
  const license = options.license ?? join(ROOT, "LICENSE");
  const readme = options.readme ?? join(ROOT, "README.md");
  const installScript = options.installScript ?? join(ROOT, "install.sh");
  requireFile(license, "LICENSE");
  requireFile(readme, "README.md");
  requireFile(installScript, "install.sh");
  if (helper !== null) requireFile(helper, "--helper");
  const mtime = options.mtime ?? (await sourceDateEpoch());

  const out = resolve(options.out);
  if (mkdirSync(out, { recursive: true }) !== undefined) chmodSync(out, 0o755);
  const docs: Entry[] = [
    { path: "LICENSE", mode: 0o644, data: readFileSync(license) },
    { path: "README.md", mode: 0o644, data: readFileSync(readme) },
  ];
  const second: Entry = helper !== null
    ? { path: HELPER_NAME, mode: 0o755, data: readFileSync(helper) }
    : { path: "NOTICE", mode: 0o644, data: Buffer.from(NOTICE) };

  // Staged beside its final place (same file system, so it moves in with a rename).
  const staged = mkdtempSync(join(out, `.staging-v${version}-`));
  const compiling = mkdtempSync(join(tmpdir(), "paseo-release-"));
  try {
    for (const t of targets) {
      const started = performance.now();
      const stem = archiveStem(version, t);
      // Always the same file name: Bun embeds it (`/$bunfs/root/<name>`) in the binary.
      const binary = join(compiling, stem, RUNTIME_NAME);
      mkdirSync(join(compiling, stem));
      await compile(binary, version, t.bun);
      if (t.os === "darwin" && canCodesign()) await adHocSign(binary);
      const archive = join(staged, archiveName(version, t));
      const entries: Entry[] = [
        { path: stem, mode: 0o755 },
        { path: RUNTIME_NAME, mode: 0o755, data: readFileSync(binary) },
        second,
        ...docs,
      ].map((e) => (e.data ? { ...e, path: `${stem}/${e.path}` } : e));
      writeArchive(archive, entries, mtime);
      rmSync(join(compiling, stem), { recursive: true, force: true });
      const mb = (statSync(archive).size / 1e6).toFixed(1);
      log(`built ${archiveName(version, t)} (${mb} MB) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    copyFileSync(installScript, join(staged, "install.sh"));
    return finishRelease({ version, out, staged, targets, withHelper: helper !== null, leftOut: options.leftOut ?? [], log });
  } finally {
    rmSync(compiling, { recursive: true, force: true });
    rmSync(staged, { recursive: true, force: true });
  }
}

export interface StagedRelease {
  version: string;
  out: string;
  /** A directory under `out` holding one archive per target and install.sh. */
  staged: string;
  targets: readonly Target[];
  withHelper: boolean;
  leftOut: readonly LeftOut[];
  log: (line: string) => void;
}

/**
 * Smoke-tests every staged archive, then: all passed → SHA256SUMS is written over them and
 * install.sh, the directory becomes `download/vX.Y.Z` (replacing an earlier build of that
 * version) and `latest/download` is refreshed; anything failed → it becomes `failed/vX.Y.Z`
 * without a SHA256SUMS, and `download/` and `latest/` are left as they were.
 */
export function finishRelease(release: StagedRelease): ReleaseResult {
  const { version, out, staged, targets, withHelper, leftOut, log } = release;
  const smoke = targets.map((t) => smokeTest(join(staged, archiveName(version, t)), t, version, withHelper));
  const ok = smoke.every((s) => s.problems.length === 0);
  const report = smokeReport(version, smoke, withHelper, leftOut);
  writeFileSync(join(out, "smoke-report.md"), report);
  chmodSync(join(out, "smoke-report.md"), 0o644);
  log(report);
  const sums = ok ? writeSums(staged, ["install.sh"]) : null;
  const dir = ok ? releaseDir(out, version) : join(out, "failed", `v${version}`);
  servable(staged);
  replaceDir(staged, dir);
  if (ok) refreshLatest(out, log);
  return { dir, archives: targets.map((t) => join(dir, archiveName(version, t))), sums, smoke, report, ok };
}

/**
 * Modes a web server running as another user can serve, whatever the umask: directories 0755
 * (mkdtemp makes them 0700), files 0644.
 */
function servable(dir: string): void {
  chmodSync(dir, 0o755);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) servable(join(dir, entry.name));
    else chmodSync(join(dir, entry.name), 0o644);
  }
}

/** Moves `from` to `to`, replacing whatever `to` held; the directory it goes into is made servable too. */
function replaceDir(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  chmodSync(dirname(to), 0o755);
  const old = `${to}.old-${process.pid}`;
  if (existsSync(to)) renameSync(to, old);
  renameSync(from, to);
  rmSync(old, { recursive: true, force: true });
}

/**
 * `latest/download` holds the files of the newest release in `download/` that is not a
 * pre-release (as GitHub's latest does), as hard links (copies where links fail); none → removed.
 */
export function refreshLatest(out: string, log: (line: string) => void = () => {}): string | null {
  const versions = existsSync(join(out, "download"))
    ? readdirSync(join(out, "download"))
        .filter((name) => name.startsWith("v") && VERSION_PATTERN.test(name.slice(1)) && !name.includes("-"))
        .filter((name) => existsSync(join(out, "download", name, SUMS_NAME)))
        .map((name) => name.slice(1))
        .sort(compareVersions)
    : [];
  const newest = versions.at(-1) ?? null;
  const latest = latestDir(out);
  if (newest === null) {
    rmSync(latest, { recursive: true, force: true });
    log("latest/download: none (no release that is not a pre-release)");
    return null;
  }
  const next = mkdtempSync(join(out, ".latest-"));
  const source = releaseDir(out, newest);
  for (const name of readdirSync(source)) {
    try {
      linkSync(join(source, name), join(next, name));
    } catch {
      copyFileSync(join(source, name), join(next, name));
    }
  }
  servable(next);
  replaceDir(next, latest);
  log(`latest/download: v${newest}`);
  return newest;
}

/** What the smoke test made of one archive: FAIL, ok (it ran), or format checked (it could not run here). */
export function verdict(s: SmokeResult): "FAIL" | "ok" | "format checked" {
  if (s.problems.length > 0) return "FAIL";
  return s.ranWith ? "ok" : "format checked";
}

/** The smoke results as a Markdown table, plus every problem and every target left out. */
export function smokeReport(version: string, smoke: readonly SmokeResult[], withHelper: boolean, leftOut: readonly LeftOut[] = []): string {
  const rows = smoke.map((s) => {
    const ran = s.ranWith ? `${s.ranWith}: \`${s.versionLine}\`` : `not executed: ${s.notRun}`;
    return `| ${s.target.bun} | ${s.format} | ${ran} | ${verdict(s)} |`;
  });
  const problems = smoke.flatMap((s) => s.problems.map((p) => `- ${s.target.bun}: ${p}`));
  const left = leftOut.map((l) => `- ${l.target.bun}: ${l.reason}. Build it on macOS: \`npm run release -- --version ${version} ... --targets ${l.target.platform}\`.`);
  return [
    `## paseo-host-runtime ${version}: smoke test (host ${process.platform}-${process.arch}, bun ${Bun.version})`,
    "",
    withHelper ? `Every archive holds ${RUNTIME_NAME}, ${HELPER_NAME}, LICENSE, README.md.` : `Built with --no-helper: every archive holds ${RUNTIME_NAME}, NOTICE, LICENSE, README.md.`,
    "",
    "| target | format | --version / describe | result |",
    "|---|---|---|---|",
    ...rows,
    "",
    `"ok": unpacked, format checked and run; "format checked": unpacked and its headers checked, but this host cannot run it.`,
    "",
    ...(problems.length ? ["Problems:", ...problems, ""] : []),
    ...(left.length ? ["Not built on this host (left for macOS):", ...left, ""] : []),
  ].join("\n");
}

export class UsageError extends Error {}

export const USAGE = `usage: npm run release -- --version X.Y.Z (--helper PATH | --no-helper) [--out DIR] [--targets LIST]
       npm run release -- --sums DIR

  --version X.Y.Z   version to embed and to name the archives with (required)
  --helper PATH     the paseo-workspace-helper executable to ship in every archive
  --no-helper       ship without it (each archive then holds a NOTICE saying so)
  --out DIR         the mirror root (default: dist/release): the release goes to
                    DIR/download/vX.Y.Z/, the newest non-pre-release to DIR/latest/download/
  --targets LIST    comma-separated Bun targets or platforms, or "linux"/"darwin" (default: all
                    seven on macOS; elsewhere all but bun-darwin-x64, which only macOS builds right)
  --sums DIR        only (re)write DIR/SHA256SUMS over the archives and install.sh in DIR
`;

export type Command = { kind: "build"; options: ReleaseOptions } | { kind: "sums"; dir: string };

function parseTargets(list: string, canSign: boolean): Target[] {
  const picked: Target[] = [];
  for (const name of list.split(",").map((s) => s.trim()).filter(Boolean)) {
    const group = name === "linux" || name === "darwin" ? TARGETS.filter((t) => t.os === name) : undefined;
    const found = group ?? [findTarget(name)].filter((t): t is Target => t !== undefined);
    if (found.length === 0) throw new UsageError(`unknown target ${JSON.stringify(name)} (known: ${TARGETS.map((t) => t.bun).join(", ")})`);
    for (const t of found) if (!picked.includes(t)) picked.push(t);
  }
  if (picked.length === 0) throw new UsageError("--targets is empty");
  for (const t of picked) {
    if (!canSign && MACOS_ONLY.has(t.bun)) throw new UsageError(`${t.bun} can only be built correctly on macOS: ${MACOS_ONLY.get(t.bun)}`);
  }
  return TARGETS.filter((t) => picked.includes(t));
}

/** Parses release.ts arguments (`canSign`: this host has codesign); throws UsageError with a sentence for the user. */
export function parseReleaseArgs(argv: readonly string[], canSign: boolean = canCodesign()): Command {
  const values = new Map<string, string>();
  const flags = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [name, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    if (name === "--no-helper" || name === "--help") {
      flags.add(name);
    } else if (["--version", "--helper", "--out", "--targets", "--sums"].includes(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined || value === "") throw new UsageError(`${name} needs a value`);
      if (values.has(name)) throw new UsageError(`${name} given twice`);
      values.set(name, value);
    } else {
      throw new UsageError(`unknown argument ${JSON.stringify(arg)}`);
    }
  }
  if (flags.has("--help")) throw new UsageError("");
  if (values.has("--sums")) {
    if (values.size > 1 || flags.size > 0) throw new UsageError("--sums takes no other option");
    return { kind: "sums", dir: values.get("--sums")! };
  }
  const version = values.get("--version")?.replace(/^v/, "");
  if (!version) throw new UsageError("--version is required");
  if (!VERSION_PATTERN.test(version)) throw new UsageError(`--version must look like 1.2.3 or 1.2.3-rc.1, got ${JSON.stringify(version)}`);
  const helper = values.get("--helper");
  if (helper !== undefined && flags.has("--no-helper")) throw new UsageError("give either --helper PATH or --no-helper, not both");
  if (helper === undefined && !flags.has("--no-helper")) {
    throw new UsageError(`--helper PATH is required: every archive ships ${HELPER_NAME} beside ${RUNTIME_NAME} (use --no-helper to release without it)`);
  }
  return {
    kind: "build",
    options: {
      version,
      helper: helper === undefined ? null : resolve(helper),
      out: resolve(values.get("--out") ?? join(ROOT, "dist/release")),
      ...(values.has("--targets") ? { targets: parseTargets(values.get("--targets")!, canSign), leftOut: [] } : defaultTargets(canSign)),
    },
  };
}

async function main(argv: string[]): Promise<number> {
  let command: Command;
  try {
    command = parseReleaseArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    if (!error.message) {
      console.log(USAGE);
      return 0;
    }
    console.error(`release: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (command.kind === "sums") {
    process.stdout.write(writeSums(resolve(command.dir), ["install.sh"]));
    return 0;
  }
  const { options } = command;
  for (const { target, reason } of options.leftOut ?? []) console.log(`left for macOS: ${target.bun}: ${reason}`);
  const result = await buildRelease(options);
  if (!result.ok) {
    console.error(`release: FAILED, see the problems above. The archives are in ${result.dir}, without ${SUMS_NAME}; nothing in ${options.out}/download or latest changed.`);
    return 1;
  }
  const counts = { ok: 0, "format checked": 0 };
  for (const s of result.smoke) counts[verdict(s) as keyof typeof counts]++;
  console.log(`release: ${result.archives.length} archives (${counts.ok} run, ${counts["format checked"]} format checked), install.sh and ${SUMS_NAME} in ${result.dir}`);
  console.log(`Serve ${options.out} as is (e.g. python3 -m http.server -d ${options.out}) and install from it with PASEO_HOST_RUNTIME_BASE_URL=<its URL>.`);
  return 0;
}

if (import.meta.main) {
  try {
    process.exit(await main(process.argv.slice(2)));
  } catch (error) {
    console.error(`release: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
