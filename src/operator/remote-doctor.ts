/**
 * `remote doctor ssh://host`: what a `--remote` runtime needs from one host, checked the way
 * the runtime itself reaches it: ssh in batch mode, a quiet remote shell, the remote binary at
 * this version, its own `doctor`, and the round-trip time of a shared connection.
 */
import { mkdtempSync } from "node:fs";
import { isAbsolute } from "node:path";
import { UsageError, commandUsage, parseArgs, type CommandTable } from "../argv.ts";
import { diagnose, writeAll } from "../output.ts";
import { decodeOwnOutput } from "../protocol/utf8.ts";
import { readOptions } from "../options.ts";
import { printJson } from "./common.ts";
import { installThere, remoteVersion } from "./remote-version.ts";
import { inWords, renderChecks, summaryLine, type Check } from "./report.ts";
import { VERSION } from "../version.ts";
import { removeTemporaryTree } from "../workspace/owned-tree.ts";
import { remoteOwner } from "../remote/context.ts";
import { RemoteStalled, closeShared, controlDirectory, runRemote, sshProgram, type SshSettings } from "../remote/ssh.ts";
import { resolveHome } from "../store/home.ts";
import { parseSshUrl, SSH_HOST_GRAMMAR, type RemoteHost } from "../ssh-url.ts";

/** Round trips measured over the shared connection. */
const ROUND_TRIPS = 5;

/** `remote doctor URL [flags]` (argv after `remote`; `commands` has the `remote` spec its flags are parsed by). */
export async function remoteDoctor(argv: readonly string[], commands: CommandTable): Promise<number> {
  let host: RemoteHost;
  let flags;
  try {
    const [sub, url, ...rest] = argv;
    if (sub !== "doctor") throw new UsageError(`unknown remote command ${JSON.stringify(sub ?? "")}: the one command is \`remote doctor ssh://host\``, "remote");
    if (url === undefined || url.startsWith("--")) throw new UsageError(`remote doctor needs the host: ${SSH_HOST_GRAMMAR}`, "remote");
    try {
      host = parseSshUrl(url);
    } catch (error) {
      throw new UsageError((error as Error).message, "remote");
    }
    flags = parseArgs(commands, ["remote", ...rest]);
    const config = flags.flags.get("ssh-config");
    if (config !== undefined && !isAbsolute(config)) throw new UsageError(`--ssh-config must be an absolute path, got ${JSON.stringify(config)}`, "remote");
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    diagnose(error.message);
    writeAll(2, commandUsage(commands, "remote"));
    return 2;
  }
  const get = (name: string) => flags.flags.get(name);
  const local = readOptions({ ...(get("owner") ? { owner: get("owner") } : {}), ...(get("home") ? { stateDirectory: get("home") } : {}), remote: {} });
  const owner = get("remote-owner") ?? remoteOwner(local, local.remote!);
  const settings: SshSettings = {
    configFile: get("ssh-config") ?? null,
    controlDir: null,
    controlPersistSeconds: 0,
    connectTimeoutSeconds: local.remote!.connectTimeoutSeconds,
    serverAliveIntervalSeconds: local.remote!.serverAliveIntervalSeconds,
    idleTimeoutSeconds: local.remote!.idleTimeoutSeconds,
  };
  const checks = await hostChecks(host, settings, { localHome: resolveHome(local), remoteHome: get("remote-home") ?? null, owner, helperPath: null });
  return report(checks, flags.switches.has("json"));
}

/** What the checks of one host take from the runtime's options. */
export interface HostCheckOptions {
  /** This side's runtime home (its ssh/ may hold the control sockets). */
  localHome: string;
  /** The runtime home and owner the host's own doctor checks (options.remote.*). */
  remoteHome: string | null;
  owner: string;
  /** remote.helperPath, for the host's doctor. */
  helperPath: string | null;
  /** The runtime's network allowlist, which the host's doctor proves there (its workloads run there, under that host's proxy); null: none configured. */
  allowlist?: readonly string[] | null;
}

/**
 * Every check of one host, as `remote doctor` makes them (also `doctor` of a `--remote`
 * runtime, for each of its hosts): a stalled host is a failed check, not an error.
 */
export async function hostChecks(host: RemoteHost, settings: SshSettings, options: HostCheckOptions): Promise<Check[]> {
  const checks = [checkControlSockets(options.localHome)];
  try {
    await runRemoteChecks(checks, host, settings, options);
  } catch (error) {
    if (!(error instanceof RemoteStalled)) throw error;
    checks.push({ name: "progress", status: "fail", detail: error.message, hint: inWords(`look at the remote host: is ${host.binary} stopped, or its home on a hung disk?`) });
  }
  return checks;
}

/**
 * Where this side's calls keep their ssh control sockets (only looks: nothing is made). None
 * usable means no connection reuse: every operation pays a full ssh handshake.
 */
function checkControlSockets(home: string): Check {
  const name = "control sockets";
  const choice = controlDirectory(home, { create: false });
  if (choice.dir !== null) return { name, status: "ok", detail: `${choice.dir} (one shared ssh connection per host)` };
  return {
    name,
    status: "warn",
    detail: `no usable directory, so every ssh call opens its own connection (ControlMaster=no): ${choice.problems.join("; ")}`,
    hint: inWords("set XDG_RUNTIME_DIR for the daemon to a 0700 directory of its user, or a shorter options.stateDirectory; a directory named above that is not this user's own (or is a symlink) was made by someone else: remove it"),
  };
}

/** The checks that reach the host, added to `checks` as they finish (a stalled host throws RemoteStalled). */
async function runRemoteChecks(checks: Check[], host: RemoteHost, settings: SshSettings, options: HostCheckOptions): Promise<void> {
  const ssh = sshClient();
  checks.push(ssh);
  if (ssh.status === "fail") return;
  const reach = await checkReach(host, settings);
  checks.push(reach);
  if (reach.status === "fail") return;
  const binary = await checkBinary(host, settings);
  checks.push(binary);
  if (binary.status !== "fail") {
    const theirs = await remoteChecks(host, settings, options);
    // The remote doctor's own binary check says what checkBinary found, with the path it runs from: one line.
    const same = theirs.find((check) => check.name === binary.name);
    if (same?.status === "ok") binary.detail = same.detail;
    checks.push(...theirs.filter((check) => check !== same));
  }
  checks.push(await checkRoundTrip(host, settings));
}

function sshClient(): Check {
  try {
    const program = sshProgram();
    const version = Bun.spawnSync([program, "-V"], { stdout: "pipe", stderr: "pipe" }).stderr.toString().trim();
    return { name: "ssh client", status: "ok", detail: `${program} (${version})` };
  } catch (error) {
    return { name: "ssh client", status: "fail", detail: (error as Error).message, hint: inWords("install the OpenSSH client (Debian: apt-get install openssh-client)") };
  }
}

/** One plain connection: authentication in batch mode, and a remote shell that prints nothing. */
async function checkReach(host: RemoteHost, settings: SshSettings): Promise<Check> {
  const name = "ssh connection";
  const started = performance.now();
  const result = await runRemote(host, settings, ["true"], null);
  const ms = Math.round(performance.now() - started);
  if (result.status !== 0) {
    return {
      name,
      status: "fail",
      detail: `ssh ${host.key} true exited ${result.status} (ssh's message is above)`,
      hint: inWords("ssh must log in without a prompt (BatchMode): a key in the ssh configuration, and the host key in known_hosts (ssh -o BatchMode=yes once by hand)"),
    };
  }
  if (result.stdout.length > 0) {
    const shown = JSON.stringify(Buffer.from(result.stdout).subarray(0, 60).toString());
    return { name, status: "fail", detail: `the remote shell printed ${result.stdout.length} bytes for \`true\`: ${shown}`, hint: inWords("make the remote user's shell startup files print nothing when not interactive") };
  }
  return { name, status: "ok", detail: `${host.key} in ${ms} ms (new connection, batch mode)` };
}

/** A remote doctor's fix line: what to do on that host, not here (a trailing comment, so a command stays one to paste there). */
function fixThere(host: RemoteHost, line: string): string {
  return `${line}   # on ${host.key}, not here`;
}

/** The remote binary runs and is this version (the remote doctor's own binary line is merged into it). */
async function checkBinary(host: RemoteHost, settings: SshSettings): Promise<Check> {
  const name = "remote binary";
  const { status, text, version } = await remoteVersion(host, settings);
  const hint = installThere(host, settings);
  if (status !== 0) {
    const alternatives = [`# give its path in the URL: ${SSH_HOST_GRAMMAR}/path/to/paseo-host-runtime`];
    return { name, status: "fail", detail: `${host.binary} --version exited ${status} on ${host.key}`, hint, alternatives };
  }
  if (version !== VERSION) return { name, status: "fail", detail: `${text || "(no output)"}; this side is ${VERSION}`, hint };
  return { name, status: "ok", detail: `${text} at ${host.binary}` };
}

/** The remote `doctor --json`, line by line. */
async function remoteChecks(host: RemoteHost, settings: SshSettings, { remoteHome, owner, helperPath, allowlist }: HostCheckOptions): Promise<Check[]> {
  const policy = allowlist ? ["--options-json", JSON.stringify({ isolation: "sandbox", network: { allow: allowlist } })] : [];
  const words = [host.binary, "doctor", "--json", "--owner", owner, ...(remoteHome === null ? [] : ["--home", remoteHome]), ...(helperPath === null ? [] : ["--helper-path", helperPath]), ...policy];
  const result = await runRemote(host, settings, words, null);
  let text: string;
  try {
    text = decodeOwnOutput(result.stdout, `doctor --json report of ${host.key}`);
  } catch (error) {
    return [{ name: "remote doctor", status: "fail", detail: (error as Error).message }];
  }
  const checks = reportChecks(text);
  // Not JSON, or not a report: the host's doctor did not answer.
  if (checks === null) return [{ name: "remote doctor", status: "fail", detail: `doctor --json on ${host.key} exited ${result.status} without a report` }];
  return checks.map((check) => ({
    ...check,
    name: `remote ${check.name}`,
    ...(check.hint === undefined ? {} : { hint: fixThere(host, check.hint) }),
    ...(check.alternatives === undefined ? {} : { alternatives: check.alternatives.map((line) => fixThere(host, line)) }),
  }));
}

/** The checks of a `doctor --json` report, or null when `text` is not one. */
function reportChecks(text: string): Check[] | null {
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch (error) {
    if (error instanceof SyntaxError) return null;
    throw error;
  }
  const checks = typeof answer === "object" && answer !== null ? (answer as { checks?: unknown }).checks : undefined;
  return Array.isArray(checks) && checks.every(isCheck) ? checks : null;
}

/** Whether `value` has what a Check's mapping and printing read. */
function isCheck(value: unknown): value is Check {
  if (typeof value !== "object" || value === null) return false;
  const { name, status, detail, hint, alternatives } = value as Record<string, unknown>;
  const strings = (list: unknown) => Array.isArray(list) && list.every((line) => typeof line === "string");
  return typeof name === "string" && typeof status === "string" && typeof detail === "string" && (hint === undefined || typeof hint === "string") && (alternatives === undefined || strings(alternatives));
}

/**
 * Median of a few `true` runs over one shared connection (what every operation after the first
 * costs). Its own control socket in a private directory: closing it afterwards must never cut
 * the shared connection a running daemon uses.
 */
async function checkRoundTrip(host: RemoteHost, base: SshSettings): Promise<Check> {
  const name = "round trip";
  const dir = mkdtempSync("/tmp/phr-doctor-");
  const settings: SshSettings = { ...base, controlDir: dir, controlPersistSeconds: 10 };
  const times: number[] = [];
  try {
    for (let i = 0; i <= ROUND_TRIPS; i++) {
      const started = performance.now();
      const result = await runRemote(host, settings, ["true"], null);
      if (result.status !== 0) return { name, status: "warn", detail: `a shared connection failed (exit ${result.status})` };
      if (i > 0) times.push(performance.now() - started);
    }
  } finally {
    closeShared(host, settings);
    removeTemporaryTree(dir);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  return { name, status: "info", detail: `${median.toFixed(1)} ms median of ${ROUND_TRIPS} commands over one shared connection (ControlMaster)` };
}

/** The report as doctor prints its own: the same marks, fix lines and last line. */
function report(checks: Check[], json: boolean): number {
  const failed = checks.filter((check) => check.status === "fail");
  if (json) {
    printJson({ ok: failed.length === 0, checks });
    return failed.length === 0 ? 0 : 1;
  }
  // The remote host's own report is among these: renderChecks and summaryLine show every field printable.
  console.log([...renderChecks(checks), "", summaryLine(checks)].join("\n"));
  return failed.length === 0 ? 0 : 1;
}
