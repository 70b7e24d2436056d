import { lazyChildProcess } from "../platform/lazy.ts";
import { isAllowlist } from "../sandbox/settings.ts";
import { existsSync } from "node:fs";
import type { Invocation } from "../argv.ts";
import { bootId, listProcesses, readProcess } from "../platform/process.ts";
import { SCHEMA_VERSION, readSchemaVersion, storePath } from "../store/db.ts";
import { listWorkspaces } from "../store/workspaces.ts";
import { liveHolder } from "../workspace/holder.ts";
import { syncProblemOf } from "../sandbox/git/sync-state.ts";
import { TARGET, VERSION } from "../version.ts";
import { readOptions, type RuntimeOptions } from "../options.ts";
import { availableControllers } from "../platform/cgroup.ts";
import { resolveHome } from "../store/home.ts";
import { checkLimits, ContainmentError, resolveContainment, type Containment } from "../containment/resolve.ts";
import { BWRAP_PACKAGE } from "../sandbox/bwrap.ts";
import { probeSandbox, sandboxTool } from "../sandbox/tool.ts";
import { operatorOptions, printJson } from "./common.ts";
import { printable } from "../printable.ts";
import { hostUrl } from "../remote/context.ts";
import { hostChecks } from "./remote-doctor.ts";
import { remoteRuntime, type RemoteRuntime } from "./remote-hosts.ts";
import { selection } from "./selection.ts";
import { checkHelper } from "./helper-check.ts";
import { checkRuntimeHome } from "./home-check.ts";
import { checkNetworkPolicy } from "./network-check.ts";
import { inWords, renderChecks, summaryLine, type Check } from "./report.ts";
import { isLinux, isMacOS } from "../platform/os.ts";
import { findGit, MIN_GIT } from "../workspace/git-environment.ts";

/** ok / fail: a required check; warn: works, but worth a look; info: informational only; skip: not checked. */
export type { Check, CheckStatus } from "./report.ts";

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function checkBinary(): Check {
  return { name: "binary", status: "ok", detail: `paseo-host-runtime ${VERSION} (${TARGET}, bun ${Bun.version}) at ${process.execPath}` };
}

function checkDatabase(home: string | null, options: RuntimeOptions): Check {
  const name = "database";
  if (home === null) return { name, status: "skip", detail: "not checked: the runtime home is unusable" };
  const path = storePath(home);
  if (!existsSync(path)) return { name, status: "ok", detail: `${path} not created yet (schema version ${SCHEMA_VERSION} on first use)` };
  let opened;
  try {
    opened = readSchemaVersion(path);
  } catch (error) {
    return { name, status: "fail", detail: `${path}: ${message(error)}`, hint: "# move it aside, or point --home (options.stateDirectory) at another directory" };
  }
  const { db, version } = opened;
  try {
    if (version === null) return { name, status: "fail", detail: `${path} is not a paseo-host-runtime database (no schema version)`, hint: "# point --home (options.stateDirectory) at a directory of its own" };
    if (version > SCHEMA_VERSION) {
      return {
        name,
        status: "fail",
        detail: `${path} has schema version ${version}, newer than this binary's ${SCHEMA_VERSION}: it was made by a newer paseo-host-runtime, and this one refuses it`,
        hint: "# install the paseo-host-runtime release that made this home (or a newer one); it is never downgraded",
      };
    }
    if (version < SCHEMA_VERSION) return { name, status: "ok", detail: `${path}: schema version ${version}; migrated to ${SCHEMA_VERSION} on first use (workspaces are kept)` };
    const all = listWorkspaces(db);
    const owned = all.filter((record) => record.owner === options.owner).length;
    const detail = `${path}: schema version ${version}, ${all.length} workspace(s), ${owned} of owner ${JSON.stringify(options.owner)}`;
    const unfinished = all.filter((record) => record.status === "destroying" && !liveHolder(record)).length;
    const orphans = all.filter((record) => record.orphanedAt !== null).length;
    const orphaned = orphans ? `, ${orphans} orphan(s) no reconcile removes` : "";
    const failing = all.filter((record) => syncProblemOf(home, record.workspaceId) !== null).length;
    if (failing > 0 && unfinished === 0) {
      return { name, status: "warn", detail: `${detail}${orphaned}, ${failing} whose sandbox's git work could not be brought into the user's repository (kept, retried before each exec and at destroy)`, hint: "paseo-host-runtime ls   # says which and why" };
    }
    if (unfinished === 0) return { name, status: "ok", detail: `${detail}${orphaned}` };
    return {
      name,
      status: "warn",
      detail: `${detail}, ${unfinished} whose destroy did not finish (their storage is still on disk)${orphaned}`,
      hint: "paseo-host-runtime ls   # says why each destroy stopped; fix that, then rm -w W finishes it",
    };
  } catch (error) {
    return { name, status: "fail", detail: `${path}: ${message(error)}` };
  } finally {
    db.close();
  }
}

/** git on the runtime's PATH (the daemon's environment), new enough for every worktree operation. */
function checkGit(): Check {
  const name = "git";
  const wanted = `${MIN_GIT[0]}.${MIN_GIT[1]}`;
  const install = isMacOS ? "xcode-select --install, or brew install git" : "apt-get install git, dnf install git";
  const hint = `# install git ${wanted} or newer (${install}) on the PATH the Paseo daemon runs with: the runtime inherits the daemon's environment`;
  const path = findGit();
  if (!path) return { name, status: "fail", detail: `git not found on PATH (${process.env.PATH ?? "unset"})`, hint };
  const result = lazyChildProcess().spawnSync(path, ["--version"], { encoding: "utf8", timeout: 10_000 });
  const text = (result.stdout ?? "").trim();
  const match = /(\d+)\.(\d+)/.exec(text);
  if (result.status !== 0 || !match) return { name, status: "fail", detail: `${path} --version failed: ${(result.stderr || result.error?.message || text).trim()}`, hint };
  const [major, minor] = [Number(match[1]), Number(match[2])];
  if (major < MIN_GIT[0] || (major === MIN_GIT[0] && minor < MIN_GIT[1])) {
    return { name, status: "fail", detail: `${path}: ${text}, older than ${wanted} (needed for rev-parse --path-format and GIT_CONFIG_COUNT)`, hint };
  }
  return { name, status: "ok", detail: `${path}: ${text}` };
}

/** A PTY for `--pty` executions: spawn a no-op on a fresh terminal and see it end normally. */
async function checkPty(): Promise<Check> {
  const name = "pty";
  const hint = "# PTY executions need /dev/ptmx and a mounted devpts (in a container: mount devpts, or allow /dev/ptmx)";
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
  const hint = isLinux ? "# mount /proc: identity and signal read /proc/PID/stat and /proc/sys/kernel/random/boot_id" : "# ps(1) and sysctl(8) must be usable";
  try {
    const self = readProcess(process.pid);
    if (!self || !Number.isFinite(self.startTicks)) throw new Error(`cannot read this process's own start time`);
    const boot = bootId();
    const visible = listProcesses().length;
    const where = isLinux ? "/proc readable" : "ps readable";
    return { name, status: "ok", detail: `${where}: boot ${boot.slice(0, 8)}, ${visible} processes visible` };
  } catch (error) {
    return { name, status: "fail", detail: message(error), hint };
  }
}

/** Which containment executions get, and why; the limits, when asked for, must be applicable. */
function checkContainment(options: RuntimeOptions, home: string | null): Check {
  const name = "containment";
  let containment: Containment;
  try {
    containment = resolveContainment(options, home ?? resolveHome(options));
    checkLimits(containment, options);
  } catch (error) {
    if (error instanceof ContainmentError) return { name, status: "fail", detail: error.problem, hint: inWords(error.fix) };
    return { name, status: "fail", detail: message(error) };
  }
  const sandboxed = options.isolation === "sandbox";
  if (containment.kind === "process-group") {
    const closed = sandboxed ? 'closed by isolation "sandbox": the sandbox\'s pid namespace ends with it' : 'isolation "sandbox" would close that: its pid namespace ends with the sandbox';
    // The fix on a line of its own: install.sh shows this warning after every install by a user without a delegated cgroup.
    const detail = `process groups: ${containment.missing?.problem ?? containment.reason}; a workload that leaves its session (setsid, a daemon) escapes cleanup, ${closed}`;
    if (options.containment === "process-group" || !isLinux) return { name, status: "ok", detail };
    const fix = containment.missing?.fix ?? "give the runtime a delegated cgroup v2 hierarchy (docs/operators.md: Cgroup containment)";
    return { name, status: "warn", detail, hint: inWords(`for a cgroup per execution: ${fix}`) };
  }
  const controllers = availableControllers(containment.root);
  const closed = sandboxed ? 'closed by isolation "sandbox": no cgroup file system inside' : 'isolation "sandbox" would close that: no cgroup file system inside';
  return {
    name,
    status: "ok",
    detail:
      `cgroup v2, a cgroup per execution under ${containment.homeCgroup} (root ${containment.root}, ${containment.source}; controllers available there: ${controllers.join(" ") || "none"}); ` +
      `a workload can leave its cgroup by writing its pid into any cgroup.procs the daemon's user may write (the runtime's own), ${closed}`,
  };
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
 * With isolation "sandbox" configured (the daemon's options: --config or --options-json), the
 * sandbox itself, for real: a sandboxed /bin/true with the namespaces every workload gets.
 */
function checkSandbox(options: RuntimeOptions): Check {
  const name = "sandbox";
  const problem = probeSandbox(options);
  if (problem !== null) {
    return { name, status: "fail", detail: problem, hint: inWords(`install ${BWRAP_PACKAGE} on the daemon's PATH and allow it its namespaces (see the detail), or set isolation "none"`) };
  }
  return { name, status: "ok", detail: `${sandboxTool()} started a sandboxed /bin/true (network ${JSON.stringify(options.network)})` };
}

/** Every check, in the order a human fixes things. */
async function runChecks(options: RuntimeOptions): Promise<Check[]> {
  const home = checkRuntimeHome(options);
  return [
    checkBinary(),
    home.check,
    checkDatabase(home.home, options),
    checkGit(),
    await checkPty(),
    checkProcessIdentity(),
    await checkHelper(options),
    checkContainment(options, home.home),
    options.isolation === "sandbox" ? checkSandbox(options) : checkSandboxTools(),
    ...(await checkNetworkPolicy(options)),
  ];
}

/**
 * `doctor`: exit 1 when a required check fails. `--quiet` prints only the failures and
 * warnings (nothing when all is well), for install.sh and scripts; the exit status is the same.
 */
export async function doctor(invocation: Invocation): Promise<number> {
  const chosen = selection(invocation);
  if (chosen.remote !== null) return await doctorRemote(invocation, await remoteRuntime(chosen));
  const raw = operatorOptions(invocation);
  const helperPath = invocation.flags.get("helper-path");
  if (helperPath !== undefined) raw.helperPath = helperPath;
  const checks = await runChecks(readOptions(raw));
  const failed = checks.filter((check) => check.status === "fail");
  if (invocation.switches.has("json")) {
    printJson({ ok: failed.length === 0, checks });
    return failed.length === 0 ? 0 : 1;
  }
  const quiet = invocation.switches.has("quiet");
  const lines = renderChecks(checks, quiet);
  if (quiet) {
    if (lines.length) console.log(lines.join("\n"));
    return failed.length === 0 ? 0 : 1;
  }
  console.log([...lines, "", summaryLine(checks)].join("\n"));
  return failed.length === 0 ? 0 : 1;
}

/**
 * `doctor` of a `--remote` runtime: `remote doctor` of each of its hosts, with the runtime's ssh
 * configuration, the hosts' home, owner and helper (options.remote; --helper-path names the
 * hosts' helper), each connection made afresh as a daemon's first call makes it. Exit 1 when a
 * required check fails on any host.
 */
async function doctorRemote(invocation: Invocation, runtime: RemoteRuntime): Promise<number> {
  const { ctx } = runtime;
  const settings = { ...ctx.settings, controlDir: null, controlPersistSeconds: 0 };
  const network = ctx.options.network;
  const allowlist = ctx.options.isolation === "sandbox" && isAllowlist(network) ? network.allow : null;
  const options = { localHome: ctx.home, remoteHome: runtime.home, owner: runtime.owner, helperPath: invocation.flags.get("helper-path") ?? ctx.remote.helperPath ?? null, allowlist };
  const reports = await Promise.all(runtime.hosts.map(async (host) => ({ host, url: hostUrl(ctx, host), checks: await hostChecks(host, settings, options) })));
  const failed = reports.flatMap(({ host, checks }) => checks.filter((check) => check.status === "fail").map((check) => ({ ...check, name: `${host.key} ${check.name}` })));
  if (invocation.switches.has("json")) {
    printJson({ ok: failed.length === 0, hosts: reports.map(({ url, checks }) => ({ host: url, ok: checks.every((check) => check.status !== "fail"), checks })) });
    return failed.length === 0 ? 0 : 1;
  }
  const quiet = invocation.switches.has("quiet");
  const lines = reports.flatMap(({ host, checks }) => {
    const shown = renderChecks(checks, quiet, "  ");
    return quiet && shown.length === 0 ? [] : [printable(`host ${host.key} (${host.binary})`), ...shown];
  });
  if (quiet) {
    if (lines.length) console.log(lines.join("\n"));
    return failed.length === 0 ? 0 : 1;
  }
  const all = reports.flatMap(({ host, checks }) => checks.map((check) => ({ ...check, name: `${host.key} ${check.name}` })));
  console.log([...lines, "", summaryLine(all)].join("\n"));
  return failed.length === 0 ? 0 : 1;
}
