#!/usr/bin/env bun
// `npm run release -- --version X.Y.Z (--helper PATH | --no-helper) [--out DIR] [--targets LIST]`
//   compiles one binary per target, packs each into a reproducible .tar.gz, writes SHA256SUMS,
//   and smoke-tests every archive (see release/README.md).
// `npm run release -- --sums DIR`
//   (re)writes DIR/SHA256SUMS over the archives and install.sh found there (the publish step).
import { $ } from "zx";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Entry, writeArchive, writeSums } from "./archive.ts";
import { adHocSign, canCodesign } from "./codesign.ts";
import { ROOT, compile } from "./compile.ts";
import { smokeTest, type SmokeResult } from "./smoke.ts";
import { HELPER_NAME, RUNTIME_NAME, SUMS_NAME, TARGETS, VERSION_PATTERN, archiveName, archiveStem, findTarget, type Target } from "./targets.ts";

export interface ReleaseOptions {
  version: string;
  /** The helper executable to ship, or null for `--no-helper` (the archive then holds a NOTICE). */
  helper: string | null;
  out: string;
  targets: readonly Target[];
  /** Files copied into every archive and beside it; default: the repository's own. */
  license?: string;
  readme?: string;
  installScript?: string;
  /** mtime of every archive member, in seconds; default SOURCE_DATE_EPOCH, else the HEAD commit time. */
  mtime?: number;
  log?: (line: string) => void;
}

export interface ReleaseResult {
  archives: string[];
  sums: string;
  smoke: SmokeResult[];
  report: string;
  ok: boolean;
}

export const NOTICE = `This archive does not contain ${HELPER_NAME}: it was built with --no-helper.

Paseo runs ${HELPER_NAME} inside every workspace (file and watch operations).
Install the official helper that matches your Paseo release, then either put an
executable named ${HELPER_NAME} next to ${RUNTIME_NAME}, or set
"helperPath" (an absolute path) in the runtime's options in Paseo's config.json.
`;

/** Files in an output directory that a release writes, and so may replace. */
const OWN_OUTPUT = /^(paseo-host-runtime-.+\.tar\.gz|SHA256SUMS|install\.sh|smoke-report\.md)$/;

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

/** Compiles, packs, checksums and smoke-tests one release into `options.out`. */
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
  mkdirSync(out, { recursive: true });
  for (const name of readdirSync(out)) if (OWN_OUTPUT.test(name)) rmSync(join(out, name));

  const docs: Entry[] = [
    { path: "LICENSE", mode: 0o644, data: readFileSync(license) },
    { path: "README.md", mode: 0o644, data: readFileSync(readme) },
  ];
  const second: Entry = helper !== null
    ? { path: HELPER_NAME, mode: 0o755, data: readFileSync(helper) }
    : { path: "NOTICE", mode: 0o644, data: Buffer.from(NOTICE) };

  const staging = mkdtempSync(join(tmpdir(), "paseo-release-"));
  const archives: string[] = [];
  try {
    for (const t of targets) {
      const started = performance.now();
      const stem = archiveStem(version, t);
      // Always the same file name: Bun embeds it (`/$bunfs/root/<name>`) in the binary.
      const binary = join(staging, stem, RUNTIME_NAME);
      mkdirSync(join(staging, stem));
      await compile(binary, version, t.bun);
      if (t.os === "darwin" && canCodesign()) await adHocSign(binary);
      const archive = join(out, archiveName(version, t));
      const entries: Entry[] = [
        { path: stem, mode: 0o755 },
        { path: RUNTIME_NAME, mode: 0o755, data: readFileSync(binary) },
        second,
        ...docs,
      ].map((e) => (e.data ? { ...e, path: `${stem}/${e.path}` } : e));
      writeArchive(archive, entries, mtime);
      rmSync(join(staging, stem), { recursive: true, force: true });
      archives.push(archive);
      const mb = (statSync(archive).size / 1e6).toFixed(1);
      log(`built ${archiveName(version, t)} (${mb} MB) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }

  copyFileSync(installScript, join(out, "install.sh"));
  const sums = writeSums(out, ["install.sh"]);
  log(`wrote ${SUMS_NAME} (${archives.length} archives + install.sh)`);

  const smoke = archives.map((archive, i) => smokeTest(archive, targets[i]!, version, helper !== null));
  const report = smokeReport(version, smoke, helper !== null);
  writeFileSync(join(out, "smoke-report.md"), report);
  log(report);
  return { archives, sums, smoke, report, ok: smoke.every((s) => s.problems.length === 0) };
}

/** The smoke results as a Markdown table, plus every problem. */
export function smokeReport(version: string, smoke: readonly SmokeResult[], withHelper: boolean): string {
  const rows = smoke.map((s) => {
    const ran = s.ranWith ? `${s.ranWith}: \`${s.versionLine}\`` : `not executed: ${s.notRun}`;
    return `| ${s.target.bun} | ${s.format} | ${ran} | ${s.problems.length ? "FAIL" : "ok"} |`;
  });
  const problems = smoke.flatMap((s) => s.problems.map((p) => `- ${s.target.bun}: ${p}`));
  return [
    `## paseo-host-runtime ${version}: smoke test (host ${process.platform}-${process.arch}, bun ${Bun.version})`,
    "",
    withHelper ? `Every archive holds ${RUNTIME_NAME}, ${HELPER_NAME}, LICENSE, README.md.` : `Built with --no-helper: every archive holds ${RUNTIME_NAME}, NOTICE, LICENSE, README.md.`,
    "",
    "| target | format | --version / describe | result |",
    "|---|---|---|---|",
    ...rows,
    "",
    ...(problems.length ? ["Problems:", ...problems, ""] : []),
  ].join("\n");
}

export class UsageError extends Error {}

export const USAGE = `usage: npm run release -- --version X.Y.Z (--helper PATH | --no-helper) [--out DIR] [--targets LIST]
       npm run release -- --sums DIR

  --version X.Y.Z   version to embed and to name the archives with (required)
  --helper PATH     the paseo-workspace-helper executable to ship in every archive
  --no-helper       ship without it (each archive then holds a NOTICE saying so)
  --out DIR         output directory (default: dist/release)
  --targets LIST    comma-separated Bun targets or platforms, or "linux"/"darwin" (default: all seven)
  --sums DIR        only (re)write DIR/SHA256SUMS over the archives and install.sh in DIR
`;

export type Command = { kind: "build"; options: ReleaseOptions } | { kind: "sums"; dir: string };

function parseTargets(list: string): Target[] {
  const picked: Target[] = [];
  for (const name of list.split(",").map((s) => s.trim()).filter(Boolean)) {
    const group = name === "linux" || name === "darwin" ? TARGETS.filter((t) => t.os === name) : undefined;
    const found = group ?? [findTarget(name)].filter((t): t is Target => t !== undefined);
    if (found.length === 0) throw new UsageError(`unknown target ${JSON.stringify(name)} (known: ${TARGETS.map((t) => t.bun).join(", ")})`);
    for (const t of found) if (!picked.includes(t)) picked.push(t);
  }
  if (picked.length === 0) throw new UsageError("--targets is empty");
  return TARGETS.filter((t) => picked.includes(t));
}

/** Parses release.ts arguments; throws UsageError with a sentence for the user. */
export function parseReleaseArgs(argv: readonly string[]): Command {
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
      targets: values.has("--targets") ? parseTargets(values.get("--targets")!) : TARGETS,
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
  const result = await buildRelease(command.options);
  if (!result.ok) {
    console.error("release: FAILED, see the problems above");
    return 1;
  }
  console.log(`release: ${result.archives.length} archives and ${SUMS_NAME} in ${command.options.out}`);
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
