/**
 * One `--remote` call: the hosts, how to reach them, and the options the remote side gets.
 * The daemon's options are read once (src/options.ts); what travels to a host is derived here.
 */
import { isAbsolute } from "node:path";
import { UsageError, type GlobalFlags } from "../argv.ts";
import { logLine } from "../log/runtime-log.ts";
import { lazyOs } from "../platform/lazy.ts";
import { readOptions, type RemoteOptions, type RuntimeOptions } from "../options.ts";
import { resolveHome } from "../store/home.ts";
import { controlDirectory, type SshSettings } from "./ssh.ts";
import { parseSshUrl, type RemoteHost } from "../ssh-url.ts";
import { configurationOf } from "../workspace/owner.ts";

/** What the command line says: `--remote URL [--ssh-config FILE]`. */
export interface RemoteCall {
  /** The `--remote` host: first of the host list, and the one `describe` asks. */
  primary: RemoteHost;
  /** `--remote` as the operator wrote it (the runtime log names hosts by their URL). */
  primaryUrl: string;
  /** `--ssh-config FILE` (absolute), or null for ssh's own default configuration. */
  configFile: string | null;
}

/**
 * The call the global flags describe: `--remote URL [--ssh-config FILE]`, checked (a URL that
 * parses, an absolute ssh configuration). Throws UsageError. Also how an operator command
 * reads a runtime's `--remote` (src/operator/selection.ts).
 */
export function remoteCallOf(globals: Pick<GlobalFlags, "remote" | "sshConfig">, command?: string): RemoteCall {
  if (globals.remote === null) throw new UsageError("--ssh-config is only for --remote ssh://…", command);
  let primary;
  try {
    primary = parseSshUrl(globals.remote);
  } catch (error) {
    throw new UsageError(`--remote: ${(error as Error).message}`, command);
  }
  if (globals.sshConfig !== null && !isAbsolute(globals.sshConfig)) throw new UsageError(`--ssh-config must be an absolute path, got ${JSON.stringify(globals.sshConfig)}`, command);
  return { primary, primaryUrl: globals.remote, configFile: globals.sshConfig };
}

/** Everything an operation needs to reach its hosts. */
export interface RemoteContext {
  call: RemoteCall;
  options: RuntimeOptions;
  remote: RemoteOptions;
  /** The `--remote` host, then options.remote.hosts, one entry per host key. */
  hosts: RemoteHost[];
  /** Each host key's URL as the operator wrote it. */
  urls: Map<string, string>;
  settings: SshSettings;
  /** Why this call runs without connection reuse although reuse is configured, or null. */
  noReuse: string | null;
  /** The local runtime home (control sockets, placements). */
  home: string;
  /** This runtime's configuration fingerprint: the remote side's `callerConfiguration`, and whose placement records are its own. */
  configuration: string;
  /** The daemon's options as the remote side gets them. */
  remoteSideOptions: Record<string, unknown>;
}

/** Settings when there are no options (`describe`): one plain connection, ssh's defaults. */
export function bareSettings(call: RemoteCall): SshSettings {
  const defaults = readOptions({ remote: {} }).remote!;
  return { configFile: call.configFile, controlDir: null, ...timing(defaults) };
}

function timing(remote: RemoteOptions) {
  return {
    controlPersistSeconds: remote.controlPersistSeconds,
    connectTimeoutSeconds: remote.connectTimeoutSeconds,
    serverAliveIntervalSeconds: remote.serverAliveIntervalSeconds,
    idleTimeoutSeconds: remote.idleTimeoutSeconds,
  };
}

/**
 * The context of one call whose request carried `raw` options (validated here). `command`: the
 * argv[0] the runtime's operations run under, which `callerConfiguration` fingerprints; an
 * operator command passes the one its operations will have, not the name it was typed as.
 */
export function remoteContext(call: RemoteCall, raw: Record<string, unknown>, command = process.argv0): RemoteContext {
  const options = readOptions(raw);
  const remote = options.remote ?? readOptions({ remote: {} }).remote!;
  const hosts = [call.primary];
  const urls = new Map([[call.primary.key, call.primaryUrl]]);
  for (const url of remote.hosts ?? []) {
    const host = parseSshUrl(url);
    if (!hosts.some((known) => known.key === host.key)) hosts.push(host);
    if (!urls.has(host.key)) urls.set(host.key, url);
  }
  const home = resolveHome(options);
  const control = remote.controlPersistSeconds > 0 ? controlDirectory(home) : { dir: null, problems: [] };
  const controlDir = control.dir;
  const configuration = configurationOf(raw, `${command}\0--remote\0${call.primary.key}`);
  const noReuse = remote.controlPersistSeconds > 0 && controlDir === null ? `no usable directory for ssh control sockets, so every ssh call opens its own connection (ControlMaster=no): ${control.problems.join("; ")}` : null;
  return {
    call,
    options,
    remote,
    hosts,
    urls,
    settings: { configFile: call.configFile, controlDir, ...timing(remote) },
    noReuse,
    home,
    configuration,
    remoteSideOptions: remoteSideOptions(raw, options, remote, configuration),
  };
}

/** Once per call, after the log knows its home: that connections are not reused, and why. */
export function logNoReuse(ctx: RemoteContext): void {
  if (ctx.noReuse !== null) logLine("warn", "no-connection-reuse", { message: ctx.noReuse });
}

/** How the runtime log names `host`: its URL as written (a host only a placement knows: `ssh://<key>`). */
export function hostUrl(ctx: RemoteContext, host: RemoteHost): string {
  return ctx.urls.get(host.key) ?? `ssh://${host.key}`;
}

/** How ssh and our diagnostics name `host` with its login (`user@host`, both IPv6 spellings), for the log to hide. */
export function hostLogins(host: RemoteHost): string[] {
  if (host.user === null) return [];
  return host.host.includes(":") ? [`${host.user}@[${host.host}]`, `${host.user}@${host.host}`] : [`${host.user}@${host.host}`];
}

/** The owner the remote side stamps: remote.owner, else `<owner>@<this host's name>`. */
export function remoteOwner(options: RuntimeOptions, remote: RemoteOptions): string {
  return remote.owner ?? `${options.owner}@${lazyOs().hostname()}`;
}

/**
 * The daemon's options minus everything local: `remote` (hosts never learn about each
 * other) and the local paths; the remote home, owner and helper come from options.remote.
 * hostVisiblePath is never exposed: the files are not on the daemon's host. The same map for
 * every operation, so the remote side fingerprints one configuration (workspace/owner.ts).
 * What it leaves out may be all two configured runtimes differ in (their `remote.*`, their
 * `--remote` host), so `callerConfiguration` carries this side's own fingerprint: without it,
 * two runtimes with one owner would each reconcile the other's workspaces away on a shared host.
 */
function remoteSideOptions(raw: Record<string, unknown>, options: RuntimeOptions, remote: RemoteOptions, configuration: string): Record<string, unknown> {
  const local = new Set(["remote", "stateDirectory", "helperPath", "owner"]);
  // fromEntries: a key such as "__proto__" stays an ordinary key and travels as it came.
  const out: Record<string, unknown> = Object.fromEntries(Object.entries(raw).filter(([key]) => !local.has(key)));
  out.owner = remoteOwner(options, remote);
  if (remote.stateDirectory !== undefined) out.stateDirectory = remote.stateDirectory;
  if (remote.helperPath !== undefined) out.helperPath = remote.helperPath;
  // A shipped repository's mirror has an empty working tree: "existing" is always a private clone.
  out.hostDirectory = "clone";
  out.exposeHostVisiblePath = false;
  out.callerConfiguration = configuration;
  return out;
}
