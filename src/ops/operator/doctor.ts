import { lazyChildProcess } from "../../platform/lazy.ts";
import { accessSync, constants, existsSync, lstatSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Invocation } from "../../cli.ts";
import { describeHelperResolution } from "../../exec/helper.ts";
import { bootId, listProcesses, readProcess } from "../../platform/process.ts";
import { SCHEMA_VERSION, openDatabase, storePath } from "../../store/db.ts";
import { checkHome, resolveHome } from "../../store/home.ts";
import { listWorkspaces } from "../../store/workspaces.ts";
import { TARGET, VERSION } from "../../version.ts";
import { readOptions, type RuntimeOptions } from "../../options.ts";
import { BWRAP_PACKAGE, probeSandbox, sandboxTool } from "../../platform/sandbox.ts";
import { operatorOptions, printJson } from "./common.ts";

/**
 * git worktree add arrived in 2.5; destroy removes worktrees with `git worktree remove`
 * (2.17), so that is the oldest git every operation works with.
 */
export const MIN_GIT: readonly [number, number] = [2, 17];

/** ok / fail: a required check; warn: works, but worth a look; info: informational only; skip: not checked. */
export type CheckStatus = "ok" | "fail" | "warn" | "info" | "skip";

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to do about a fail or warn. */
  hint?: string;
}

const MARK: Record<CheckStatus, string> = { ok: "✓", fail: "✗", warn: "!", info: "·", skip: "-" };

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function checkBinary(): Check {
  return { name: "binary", status: "ok", detail: `paseo-host-runtime ${VERSION} (${TARGET}, bun ${Bun.version}) at ${process.execPath}` };
}

/** The home: resolvable, and either usable or creatable. Returns the home when it is usable. */
function checkRuntimeHome(options: RuntimeOptions): { check: Check; home: string | null } {
  const name = "runtime home";
  let home: string;
  try {
    home = resolveHome(options);
  } catch (error) {
    return { check: { name, status: "fail", detail: message(error), hint: "give an absolute options.stateDirectory (or --home DIR)" }, home: null };
  }
  if (!existsSync(home)) {
    let parent = dirname(home);
    while (!existsSync(parent) && parent !== dirname(parent)) parent = dirname(parent);
    try {
      accessSync(parent, constants.W_OK);
    } catch {
      return {
        check: { name, status: "fail", detail: `${home} does not exist and ${parent} is not writable`, hint: `create it: mkdir -p -m 700 ${home}` },
        home: null,
      };
    }
    return { check: { name, status: "ok", detail: `${home} (not created yet; made with mode 700 on first use)` }, home };
  }
  try {
    checkHome(home);
  } catch (error) {
    const text = message(error);
    const hint = text.includes("owned by") ? `use a home of your own (options.stateDirectory), or: chown $(id -u) ${home}` : `chmod 700 ${home}`;
    return { check: { name, status: "fail", detail: text, hint }, home: null };
  }
  const stat = lstatSync(home);
  return { check: { name, status: "ok", detail: `${home} (mode ${(stat.mode & 0o777).toString(8)}, uid ${stat.uid})` }, home };
}

function checkDatabase(home: string | null, options: RuntimeOptions): Check {
  const name = "database";
  if (home === null) return { name, status: "skip", detail: "not checked: the runtime home is unusable" };
  const path = storePath(home);
  if (!existsSync(path)) return { name, status: "ok", detail: `${path} not created yet (schema version ${SCHEMA_VERSION} on first use)` };
  try {
    const db = openDatabase(path);
    try {
      const all = listWorkspaces(db).length;
      const owner = options.owner;
      const owned = listWorkspaces(db, owner).length;
      return { name, status: "ok", detail: `${path}: schema version ${SCHEMA_VERSION}, ${all} workspace(s), ${owned} of owner ${JSON.stringify(owner)}` };
    } finally {
      db.close();
    }
  } catch (error) {
    return { name, status: "fail", detail: message(error), hint: "use the paseo-host-runtime release that made this home, or point options.stateDirectory at another directory" };
  }
}

/** git on the runtime's PATH (the daemon's environment), new enough for every worktree operation. */
function checkGit(): Check {
  const name = "git";
  const wanted = `${MIN_GIT[0]}.${MIN_GIT[1]}`;
  const hint = `install git ${wanted} or newer on the PATH the Paseo daemon runs with (the runtime inherits the daemon's environment)`;
  const path = Bun.which("git", { PATH: process.env.PATH ?? "" });
  if (!path) return { name, status: "fail", detail: `git not found on PATH (${process.env.PATH ?? "unset"})`, hint };
  const result = lazyChildProcess().spawnSync(path, ["--version"], { encoding: "utf8", timeout: 10_000 });
  const text = (result.stdout ?? "").trim();
  const match = /(\d+)\.(\d+)/.exec(text);
  if (result.status !== 0 || !match) return { name, status: "fail", detail: `${path} --version failed: ${(result.stderr || result.error?.message || text).trim()}`, hint };
  const [major, minor] = [Number(match[1]), Number(match[2])];
  if (major < MIN_GIT[0] || (major === MIN_GIT[0] && minor < MIN_GIT[1])) {
    return { name, status: "fail", detail: `${path}: ${text}, older than ${wanted} (needed for git worktree add/remove)`, hint };
  }
  return { name, status: "ok", detail: `${path}: ${text}` };
}

/** A PTY for `--pty` executions: spawn a no-op on a fresh terminal and see it end normally. */
async function checkPty(): Promise<Check> {
  const name = "pty";
  const hint = "PTY executions need /dev/ptmx and a mounted devpts (in a container: mount devpts, or allow /dev/ptmx)";
  const program = Bun.which("true", { PATH: "/usr/bin:/bin" }) ?? "/bin/true";
  try {
    const proc = Bun.spawn([program], { env: {}, terminal: { cols: 80, rows: 24, data() {} } });
    const timeout = setTimeout(() => proc.kill("SIGKILL"), 5000);
    await proc.exited;
    clearTimeout(timeout);
    proc.terminal?.close();
    if (proc.exitCode !== 0) return { name, status: "fail", detail: `${program} on a PTY ended with ${proc.signalCode ?? `exit ${proc.exitCode}`}`, hint };
    return { name, status: "ok", detail: "a PTY can be allocated" };
  } catch (error) {
    return { name, status: "fail", detail: `cannot allocate a PTY: ${message(error)}`, hint };
  }
}

/** Process identity (pid, start time, boot id) is how the runtime finds and signals workloads. */
function checkProcessIdentity(): Check {
  const name = "process identity";
  const hint = process.platform === "linux" ? "mount /proc (identity and signal need /proc/<pid>/stat and /proc/sys/kernel/random/boot_id)" : "ps(1) and sysctl(8) must be usable";
  try {
    const self = readProcess(process.pid);
    if (!self || !Number.isFinite(self.startTicks)) throw new Error(`cannot read this process's own start time`);
    const boot = bootId();
    const visible = listProcesses().length;
    const where = process.platform === "linux" ? "/proc readable" : "ps readable";
    return { name, status: "ok", detail: `${where}: boot ${boot.slice(0, 8)}…, ${visible} processes visible` };
  } catch (error) {
    return { name, status: "fail", detail: message(error), hint };
  }
}

/** Where `paseo-workspace-helper` comes from for the daemon's helper calls (env `{}`). */
function checkHelper(options: RuntimeOptions): Check {
  const name = "workspace helper";
  try {
    const found = describeHelperResolution(options.helperPath);
    return { name, status: "ok", detail: `${found.path} (from ${found.source}${found.javascript ? ", JavaScript run by the embedded engine" : ""})` };
  } catch (error) {
    return {
      name,
      status: "warn",
      detail: message(error),
      hint: "install paseo-workspace-helper beside this binary, set options.helperPath (doctor: --helper-path), or give the daemon an absolute helperCommand",
    };
  }
}

function checkCgroup(): Check {
  const name = "cgroup v2";
  if (process.platform !== "linux") return { name, status: "info", detail: "not applicable on this platform (informational)" };
  try {
    const controllers = readFileSync("/sys/fs/cgroup/cgroup.controllers", "utf8").trim();
    return { name, status: "ok", detail: `present (controllers: ${controllers || "none delegated"}; informational)` };
  } catch {
    return { name, status: "info", detail: "not found at /sys/fs/cgroup (informational; nothing uses it yet)" };
  }
}

function checkSandboxTools(): Check {
  const found = ["bwrap", "firejail", "nsjail"].map((tool) => [tool, Bun.which(tool, { PATH: process.env.PATH ?? "" })] as const);
  const present = found.filter(([, path]) => path !== null).map(([tool, path]) => `${tool} ${path}`);
  return {
    name: "sandbox tools",
    status: present.length ? "ok" : "info",
    detail: present.length ? `${present.join(", ")} (informational)` : "none of bwrap, firejail, nsjail on PATH (informational)",
  };
}

/**
 * With isolation "sandbox" configured (doctor: --isolation sandbox), the sandbox itself, for
 * real: a sandboxed /bin/true with the namespaces every workload gets.
 */
function checkSandbox(options: RuntimeOptions): Check {
  const name = "sandbox";
  const problem = probeSandbox(options.network);
  if (problem !== null) {
    return { name, status: "fail", detail: problem, hint: `install ${BWRAP_PACKAGE} on the daemon's PATH and allow it its namespaces (see the detail), or set isolation "none"` };
  }
  return { name, status: "ok", detail: `${sandboxTool()} started a sandboxed /bin/true (network ${JSON.stringify(options.network)})` };
}

/** Every check, in the order a human fixes things. */
export async function runChecks(options: RuntimeOptions): Promise<Check[]> {
  const home = checkRuntimeHome(options);
  return [
    checkBinary(),
    home.check,
    checkDatabase(home.home, options),
    checkGit(),
    await checkPty(),
    checkProcessIdentity(),
    checkHelper(options),
    checkCgroup(),
    options.isolation === "sandbox" ? checkSandbox(options) : checkSandboxTools(),
  ];
}

/**
 * `doctor [--home DIR] [--owner O] [--helper-path PATH] [--json] [--quiet]`: exit 1 when a required
 * check fails. `--quiet` prints only the failures and warnings (nothing when all is well), for
 * install.sh and scripts; the exit status is the same.
 */
export async function doctor(invocation: Invocation): Promise<number> {
  const raw = operatorOptions(invocation);
  const helperPath = invocation.flags.get("helper-path");
  if (helperPath !== undefined) raw.helperPath = helperPath;
  const isolation = invocation.flags.get("isolation");
  if (isolation !== undefined) raw.isolation = isolation;
  const checks = await runChecks(readOptions(raw));
  const failed = checks.filter((check) => check.status === "fail");
  if (invocation.switches.has("json")) {
    printJson({ ok: failed.length === 0, checks });
    return failed.length === 0 ? 0 : 1;
  }
  const quiet = invocation.switches.has("quiet");
  const width = Math.max(...checks.map((check) => check.name.length));
  const lines: string[] = [];
  for (const check of checks) {
    if (quiet && check.status !== "fail" && check.status !== "warn") continue;
    lines.push(`${MARK[check.status]} ${check.name.padEnd(width)}  ${check.detail}`);
    if (check.hint && (check.status === "fail" || check.status === "warn")) lines.push(`  ${" ".repeat(width)}  fix: ${check.hint}`);
  }
  const warned = checks.filter((check) => check.status === "warn").length;
  if (quiet) {
    if (lines.length) console.log(lines.join("\n"));
    return failed.length === 0 ? 0 : 1;
  }
  lines.push("");
  if (failed.length) lines.push(`${failed.length} required check(s) failed: ${failed.map((check) => check.name).join(", ")}`);
  else lines.push(`all required checks passed${warned ? ` (${warned} warning(s))` : ""}`);
  console.log(lines.join("\n"));
  return failed.length === 0 ? 0 : 1;
}
