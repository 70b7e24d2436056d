// Smoke test of one release archive: unpack it with the system's tar, check the member list and
// the executable's format, then run `--version` and `describe` when this machine can — natively,
// through the musl loader, under qemu-user, or under Rosetta — and say plainly when it cannot.
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { codePageHashProblem, describeFormat, formatMismatch, readBinaryFormat, type BinaryFormat } from "./binary-format.ts";
import { HELPER_NAME, RUNTIME_NAME, archiveStem, type Target } from "./targets.ts";

export interface SmokeResult {
  target: Target;
  archive: string;
  /** `ELF arm64 (glibc, /lib/ld-linux-aarch64.so.1)`. */
  format: string;
  /** How the binary was run (`native`, `qemu-aarch64 -L /usr/aarch64-linux-gnu`), or undefined. */
  ranWith?: string;
  /** Why it was not run, when it was not. */
  notRun?: string;
  /** The `--version` line, when it ran. */
  versionLine?: string;
  /** Everything that is wrong; empty means the archive passed. */
  problems: string[];
}

/** Members every archive holds besides its top directory; NOTICE replaces a missing helper. */
export function expectedMembers(withHelper: boolean): string[] {
  return [RUNTIME_NAME, withHelper ? HELPER_NAME : "NOTICE", "LICENSE", "README.md"].sort();
}

const LOADER_ERROR = /error while loading shared libraries|Error loading shared library|Error relocating|No such file or directory.*ld-|Bad CPU type|cannot execute binary file/i;

interface Host {
  os: string;
  arch: string;
  libc?: BinaryFormat["libc"];
}

function thisHost(): Host {
  let libc: BinaryFormat["libc"] | undefined;
  try {
    libc = readBinaryFormat(process.execPath).libc;
  } catch {
    libc = undefined;
  }
  return { os: process.platform, arch: process.arch, libc };
}

const QEMU_ARCH = { x64: "x86_64", arm64: "aarch64" } as const;
const CROSS_SYSROOT = { x64: "/usr/x86_64-linux-gnu", arm64: "/usr/aarch64-linux-gnu" } as const;

/** A directory where qemu finds `interpreter` (`-L`), or undefined. */
function qemuSysroot(f: BinaryFormat): string | undefined {
  const interp = f.interpreter ?? "";
  const candidates = [process.env.QEMU_LD_PREFIX, f.libc === "glibc" ? CROSS_SYSROOT[f.arch] : undefined, "/"];
  for (const root of candidates) {
    if (!root) continue;
    // Debian's cross sysroots hold the loader in lib/ even when the ELF asks for /lib64/.
    if (existsSync(join(root, interp)) || existsSync(join(root, "lib", interp.split("/").pop()!))) return root;
  }
  return undefined;
}

/** How to run a binary of format `f` here: an argv prefix and a label, or the reason it cannot run. */
export function runnerFor(t: Target, f: BinaryFormat, host: Host = thisHost()): { prefix: string[]; label: string } | { notRun: string } {
  if (t.os !== host.os) return { notRun: `a ${t.os} binary does not run on ${host.os}` };
  if (t.arch === host.arch) {
    if (t.os === "darwin" || f.libc === host.libc) return { prefix: [], label: "native" };
    if (!existsSync(f.interpreter!)) return { notRun: `no ${f.interpreter} on this host (a ${f.libc} system runs it)` };
    return { prefix: [], label: `native, through ${f.interpreter}` };
  }
  if (t.os === "darwin") {
    if (host.arch === "arm64") return { prefix: [], label: "Rosetta 2" };
    return { notRun: "an arm64 binary does not run on an x64 Mac" };
  }
  const qemu = Bun.which(`qemu-${QEMU_ARCH[t.arch]}`) ?? Bun.which(`qemu-${QEMU_ARCH[t.arch]}-static`);
  if (!qemu) return { notRun: `qemu-${QEMU_ARCH[t.arch]} is not installed (apt-get install qemu-user)` };
  const root = qemuSysroot(f);
  if (!root) {
    const hint = f.libc === "glibc" ? `apt-get install libc6-${t.arch}-cross` : "a musl sysroot";
    return { notRun: `qemu has no ${f.interpreter} to load (${hint}, or set QEMU_LD_PREFIX)` };
  }
  return { prefix: [qemu, "-L", root], label: `qemu-${QEMU_ARCH[t.arch]} -L ${root}` };
}

function run(argv: string[], cwd: string): { code: number | null; stdout: string; stderr: string } {
  const proc = Bun.spawnSync(argv, {
    cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd },
    stdin: "ignore",
    timeout: 60_000,
  });
  return { code: proc.exitCode, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

/** Unpacks `archive` (built for `t` at `version`) and checks it; `withHelper` says what it should hold. */
export function smokeTest(archive: string, t: Target, version: string, withHelper: boolean): SmokeResult {
  const result: SmokeResult = { target: t, archive, format: "?", problems: [] };
  const scratch = mkdtempSync(join(tmpdir(), "paseo-smoke-"));
  try {
    const untar = Bun.spawnSync(["tar", "-xzf", archive, "-C", scratch], { stderr: "pipe" });
    if (untar.exitCode !== 0) {
      result.problems.push(`tar -xzf failed: ${untar.stderr.toString().trim()}`);
      return result;
    }
    const stem = archiveStem(version, t);
    const top = readdirSync(scratch);
    if (top.length !== 1 || top[0] !== stem) result.problems.push(`top level is [${top.join(", ")}], expected [${stem}]`);
    const dir = join(scratch, stem);
    if (!existsSync(dir)) return result;
    const members = readdirSync(dir).sort();
    const want = expectedMembers(withHelper);
    if (members.join(",") !== want.join(",")) result.problems.push(`holds [${members.join(", ")}], expected [${want.join(", ")}]`);
    for (const exe of [RUNTIME_NAME, HELPER_NAME]) {
      if (existsSync(join(dir, exe)) && (statSync(join(dir, exe)).mode & 0o777) !== 0o755) result.problems.push(`${exe} is not mode 755`);
    }

    const binary = join(dir, RUNTIME_NAME);
    let f: BinaryFormat;
    try {
      f = readBinaryFormat(binary);
    } catch (error) {
      result.problems.push(error instanceof Error ? error.message : String(error));
      return result;
    }
    result.format = describeFormat(f);
    const mismatch = formatMismatch(f, t);
    if (mismatch) {
      result.problems.push(`wrong format: ${mismatch}`);
      result.notRun = "wrong format";
      return result;
    }
    if (f.format === "Mach-O" && f.codeSignature) {
      const broken = codePageHashProblem(binary);
      result.format += broken ? ", page hashes DO NOT match" : ", page hashes match";
      if (broken) result.problems.push(`code signature broken (${broken}): re-sign on macOS with codesign --force --sign -`);
    }
    if (f.format === "Mach-O" && !f.codeSignature && f.arch === "arm64") result.problems.push("unsigned: macOS on arm64 runs only signed code");

    const runner = runnerFor(t, f);
    if ("notRun" in runner) {
      result.notRun = runner.notRun;
      return result;
    }
    const versionRun = run([...runner.prefix, binary, "--version"], scratch);
    if (versionRun.code !== 0 && runner.label !== "native" && LOADER_ERROR.test(versionRun.stderr)) {
      result.notRun = `${runner.label}: ${versionRun.stderr.trim().split("\n")[0]}`;
      return result;
    }
    result.ranWith = runner.label;
    result.versionLine = versionRun.stdout.trim();
    const wantPrefix = `${RUNTIME_NAME} ${version} (${t.os}-${t.arch},`;
    if (versionRun.code !== 0 || !versionRun.stdout.startsWith(wantPrefix)) {
      result.problems.push(`--version exited ${versionRun.code} with ${JSON.stringify(versionRun.stdout + versionRun.stderr)}, expected "${wantPrefix} …"`);
    }
    const describe = run([...runner.prefix, binary, "describe"], scratch);
    const lines = describe.stdout.split("\n");
    let parsed: { protocolVersion?: unknown; modes?: unknown } | undefined;
    try {
      parsed = lines.length === 2 && lines[1] === "" ? JSON.parse(lines[0]!) : undefined;
    } catch {
      parsed = undefined;
    }
    if (describe.code !== 0 || parsed?.protocolVersion !== 1 || !Array.isArray(parsed.modes) || !parsed.modes.includes("pipes")) {
      result.problems.push(`describe exited ${describe.code} with ${JSON.stringify(describe.stdout + describe.stderr)}`);
    }
    return result;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
