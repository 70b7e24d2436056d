/**
 * `config check [FILE]`: reads the Paseo daemon's config.json (default `$PASEO_HOME/config.json`,
 * PASEO_HOME defaulting to ~/.paseo), finds every runtime that runs paseo-host-runtime, and
 * judges its `options` with the schema every operation uses: unknown keys (with the nearest
 * known one), bad values, homes that would be refused, containment and limits every create
 * would refuse on this host, and runtimes sharing a home and owner. Exit 0 when clean, 1 when a
 * problem was found. What only the daemon's own environment shows (git on its PATH, the helper,
 * the sandbox, PTYs, its cgroup) is doctor's: `doctor --config FILE --runtime NAME`, run as it.
 */
import type { Invocation } from "../argv.ts";
import { diagnose } from "../output.ts";
import { DEFAULT_OWNER, optionProblems, readOptions, unknownOptions, type RuntimeOptions } from "../options.ts";
import { HomeError, HomeSettingError, resolveHome } from "../store/home.ts";
import { printJson, shellQuote } from "./common.ts";
import { askedLimits, checkLimits, ContainmentError, hostContainmentProblem, resolveContainment, wantsLimits } from "../containment/resolve.ts";
import { printable } from "../printable.ts";
import { jsonTypeName } from "../protocol/common.ts";
import { configurationOf } from "../workspace/owner.ts";
import { DaemonConfigError, argv0Of, defaultConfigPath, ourRuntimes, readDaemonConfig, type CommandRuntime } from "./daemon-config.ts";
import { checkRuntimeHome } from "./home-check.ts";
import { inWords, renderChecks, type Check } from "./report.ts";

/** One runtime's verdict. */
interface RuntimeReport {
  name: string;
  command: string[] | null;
  thisBinary: boolean;
  remote: string | null;
  /** The runtime home and owner, when its options are valid (home: null for a remote runtime). */
  home: string | null;
  owner: string | null;
  /** The configuration fingerprint its workspaces are stamped with (workspace/owner.ts), when known. */
  configuration: string | null;
  checks: Check[];
}

function unknownKeyChecks(options: Record<string, unknown>): Check[] {
  return unknownOptions(options).map(({ key, nearest }) => {
    const guess = nearest === null ? "" : `; did you mean ${JSON.stringify(nearest)}?`;
    return { name: "option", status: "fail", detail: `unknown option ${JSON.stringify(key)}, ignored by the runtime${guess}` };
  });
}

function judge(runtime: CommandRuntime): RuntimeReport {
  const report: RuntimeReport = { name: runtime.name, command: runtime.argv, thisBinary: runtime.thisBinary, remote: runtime.remote, home: null, owner: null, configuration: null, checks: [] };
  const add = (check: Check) => report.checks.push(check);
  if (runtime.otherCopy) add({ name: "command", status: "warn", detail: `${runtime.program} is another paseo-host-runtime than this one (${process.execPath}); judged with this binary's schema`, hint: `${runtime.program} config check   # judge it with that binary` });
  if (runtime.note && runtime.program !== null && !runtime.thisBinary) add({ name: "command", status: "fail", detail: runtime.note });
  const raw = runtime.options ?? {};
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    add({ name: "options", status: "fail", detail: `options must be an object, got ${jsonTypeName(raw)}` });
    return report;
  }
  const options = raw as Record<string, unknown>;
  unknownKeyChecks(options).forEach(add);
  for (const problem of optionProblems(options)) add({ name: "option", status: "fail", detail: problem });
  // The home and owner are judged even when another value is bad: they are what sharing is about.
  const placing = Object.fromEntries(Object.entries(options).filter(([key]) => key === "owner" || key === "stateDirectory"));
  if (optionProblems(placing).length > 0) return report;
  const settings = readOptions(placing);
  report.owner = settings.owner;
  const argv0 = argv0Of(runtime);
  if (argv0 !== null) report.configuration = configurationOf(options, argv0);
  if (runtime.remote !== null) {
    add({ name: "home", status: "info", detail: `on ${runtime.remote} (--remote): not checked here; doctor --config FILE --runtime ${shellQuote(runtime.name)} checks each of its hosts` });
    return report;
  }
  const { check } = checkRuntimeHome(settings);
  if (settings.stateDirectory === undefined) check.detail += " (stateDirectory unset: the home follows the daemon's environment; this is what this environment gives)";
  add({ ...check, name: "home" });
  try {
    report.home = resolveHome(settings);
  } catch (error) {
    // Already reported by the home check.
    if (!(error instanceof HomeSettingError || error instanceof HomeError)) throw error;
  }
  const limits = report.home !== null && optionProblems(options).length === 0 ? containmentCheck(readOptions(options), report.home) : null;
  if (limits) add(limits);
  return report;
}

/**
 * What create refuses before anything changes (protocol-ops/create.ts): containment "cgroup" without a
 * usable hierarchy, or limits (memoryMax, pidsMax, cpuMax) this host's cgroups cannot apply.
 * Checked here as this user. With cgroupRoot unset the root is the daemon's own cgroup, which
 * only doctor run as the daemon sees: what no cgroup of this host could give fails, what this
 * process's own cgroup cannot give is a warning.
 */
function containmentCheck(options: RuntimeOptions, home: string): Check | null {
  if (options.containment !== "cgroup" && !wantsLimits(options)) return null;
  const name = "containment";
  const asked = wantsLimits(options) ? askedLimits(options).join(", ") : 'containment "cgroup"';
  const autodetected = options.cgroupRoot === undefined && options.containment !== "process-group";
  const caveat = autodetected ? `; judged in this process's cgroup: the daemon's own decides (doctor --config FILE --runtime NAME, run as the daemon, in its service, checks it there)` : "";
  const everywhere = autodetected ? hostContainmentProblem(options) : null;
  if (everywhere) return { name, status: "fail", detail: `${asked}: every create would refuse it on this host: ${everywhere.problem}`, hint: inWords(everywhere.fix) };
  try {
    const containment = resolveContainment(options, home);
    const controllers = checkLimits(containment, options);
    const where = containment.kind === "cgroup" ? `cgroup v2 under ${containment.root}${controllers.length ? ` with ${controllers.join(", ")}` : ""}` : "process groups";
    return { name, status: "ok", detail: `${asked}: applicable here (${where})${caveat}` };
  } catch (error) {
    if (!(error instanceof ContainmentError)) throw error;
    return { name, status: autodetected ? "warn" : "fail", detail: `${asked}: every create would refuse it here: ${error.problem}${caveat}`, hint: inWords(error.fix) };
  }
}

/**
 * Two runtimes of one host with the same home and owner see each other's workspaces as their
 * own, and each one's reconcile destroys what the other made: always with an explicit owner
 * (the owner is reconcile's whole scope), and with the default owner when their configurations
 * are the same too (reconcile is then limited to its configuration; workspace/owner.ts).
 */
function sharedHomes(reports: RuntimeReport[]): void {
  const seen = new Map<string, RuntimeReport[]>();
  for (const report of reports) {
    if (report.owner === null || (report.home === null && report.remote === null)) continue;
    const key = JSON.stringify([report.remote, report.home, report.owner]);
    const earlier = seen.get(key) ?? [];
    seen.set(key, [...earlier, report]);
    const where = report.remote === null ? `home ${report.home}` : `the home on ${report.remote}`;
    for (const first of earlier) {
      const pair = `runtimes ${JSON.stringify(first.name)} and ${JSON.stringify(report.name)} share ${where} and owner ${JSON.stringify(report.owner)}`;
      const apart = report.owner === DEFAULT_OWNER && first.configuration !== null && report.configuration !== null && first.configuration !== report.configuration;
      if (apart) {
        report.checks.push({ name: "shared", status: "info", detail: `${pair}; with the default owner, reconcile keeps their workspaces apart by configuration` });
        continue;
      }
      const why = report.owner === DEFAULT_OWNER ? " (the same configuration too)" : "";
      report.checks.push({
        name: "shared",
        status: "fail",
        detail: `${pair}${why}: each one's reconcile would destroy the other's workspaces`,
        hint: `# give each runtime its own "owner" (or its own "stateDirectory")`,
      });
    }
  }
}

/** `config check [FILE] [--json]`. */
export function configCheck(invocation: Invocation): number {
  const path = invocation.args[0] ?? defaultConfigPath();
  let config;
  try {
    config = readDaemonConfig(path);
  } catch (error) {
    if (!(error instanceof DaemonConfigError)) throw error;
    diagnose(`config check: ${error.message}`);
    return 1;
  }
  const ours = ourRuntimes(config);
  const reports = ours.map(judge);
  sharedHomes(reports);
  const problems = reports.reduce((sum, report) => sum + report.checks.filter((check) => check.status === "fail").length, 0);
  const others = config.runtimes.filter((runtime) => !ours.includes(runtime)).map((runtime) => runtime.name);
  if (invocation.switches.has("json")) {
    printJson({ path: config.path, runtimes: reports, otherRuntimes: others, problems });
    return problems === 0 && reports.length > 0 ? 0 : 1;
  }
  // Names, commands and paths come from the file: printable, like the checks (renderChecks).
  const lines = [printable(`${config.path}: ${reports.length} runtime(s) run paseo-host-runtime${others.length ? `; not checked (another command): ${others.join(", ")}` : ""}`)];
  if (reports.length === 0) {
    const unresolved = config.runtimes.filter((runtime) => runtime.note !== null && !runtime.otherCopy);
    for (const runtime of unresolved) lines.push(printable(`  runtime ${JSON.stringify(runtime.name)}: ${runtime.note}`));
    lines.push(printable(`no runtime in it has "command": [${JSON.stringify(process.execPath)}, ...] (workspaceRuntimes entries of type "command")`));
    console.log(lines.join("\n"));
    return 1;
  }
  for (const report of reports) {
    lines.push("", printable(`runtime ${JSON.stringify(report.name)}: ${JSON.stringify(report.command)}${report.remote ? ` (remote: ${report.remote})` : ""}`));
    const checks = [...report.checks];
    const optionsBad = checks.some((check) => (check.name === "option" || check.name === "options") && check.status === "fail");
    if (!optionsBad) checks.unshift({ name: "options", status: "ok", detail: `valid; owner ${JSON.stringify(report.owner)}` });
    lines.push(...renderChecks(checks, false, "  "));
  }
  lines.push(
    "",
    "Checked here: the options, the homes, sharing, and containment and limits against this host's cgroups. The daemon's own",
    "environment (git on its PATH, the helper, the sandbox, PTYs, its cgroup) is checked by doctor --config FILE --runtime NAME, run as it.",
    problems === 0 ? "no problems found" : `${problems} problem(s) found`,
  );
  console.log(lines.join("\n"));
  return problems === 0 ? 0 : 1;
}
