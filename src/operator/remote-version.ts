/**
 * A remote host's paseo-host-runtime must be this version (the daemon never checks). Here: what
 * that host runs, the warning `new` and `run` give before they use a host that runs another
 * one, and the fix line, pasted on this side as printed: the same ssh (its -F config, so the
 * host key check passes), and a release site the host can reach (a file:// or loopback site is
 * this machine's: the release is shipped over that ssh instead).
 */
import { basename, dirname, isAbsolute } from "node:path";
import { fileURLToPath } from "node:url";
import { diagnose } from "../output.ts";
import { runRemote, type SshSettings } from "../remote/ssh.ts";
import { DEFAULT_REMOTE_BINARY, type RemoteHost } from "../ssh-url.ts";
import { RELEASE_VERSION_PATTERN, VERSION } from "../version.ts";
import { shellQuote } from "../shell-quote.ts";
import { installCommand, isLocalSite, releaseSite } from "./installer.ts";
import { inWords } from "./report.ts";

/** Where a shipped release waits on the remote host (its user's own; install.sh records it as the site). */
const SHIPPED = "$HOME/.cache/paseo-host-runtime/mirror";

/** `ssh [-F CONFIG] [-p PORT] [USER@]HOST COMMAND` for a fix line: what to run there, from here. */
export function sshCommand(host: RemoteHost, settings: Pick<SshSettings, "configFile">, command: string): string {
  const words = ["ssh", ...(settings.configFile === null ? [] : ["-F", settings.configFile]), ...(host.port === null ? [] : ["-p", String(host.port)]), `${host.user === null ? "" : `${host.user}@`}${host.host}`];
  return [...words.map(shellQuote), shellQuote(command)].join(" ");
}

/** The fix line for a host without this version: install it there, into the directory the URL's binary is in. */
export function installThere(host: RemoteHost, settings: Pick<SshSettings, "configFile">): string {
  const dir = isAbsolute(host.binary) && basename(host.binary) === DEFAULT_REMOTE_BINARY ? dirname(host.binary) : null;
  const args = dir === null ? [] : ["--dir", dir];
  const site = releaseSite();
  if (!isLocalSite(site)) return `${sshCommand(host, settings, installCommand(args, site))}   # install this version there`;
  if (!site.startsWith("file:") || !RELEASE_VERSION_PATTERN.test(VERSION)) {
    return inWords(`install paseo-host-runtime ${VERSION} on ${host.key}: this side's release site ${site} is this machine's, which ${host.key} cannot download from`);
  }
  // This side's mirror is a directory here: its release directory goes over the same ssh, and install.sh runs from it there.
  const release = `download/v${VERSION}`;
  const there = `d="${SHIPPED}" && mkdir -p "$d" && tar -C "$d" -xf - && PASEO_HOST_RUNTIME_BASE_URL="file://$d" sh "$d/${release}/install.sh" ${["--version", VERSION, ...args].map(shellQuote).join(" ")}`;
  return `tar -C ${shellQuote(fileURLToPath(site))} -cf - ${release} | ${sshCommand(host, settings, there)}   # ships this side's release (${site}) there and installs it`;
}

/** What `binary --version` says on the host: its version (null when it says none), or how it failed. */
export async function remoteVersion(host: RemoteHost, settings: SshSettings): Promise<{ status: number; text: string; version: string | null }> {
  const result = await runRemote(host, settings, [host.binary, "--version"], null, { stderr: "keep" });
  // Lenient: this is shown to a person, and a program that is not ours may print anything.
  const text = new TextDecoder().decode(result.stdout).trim();
  return { status: result.status, text, version: result.status === 0 ? (/^paseo-host-runtime (\S+)/.exec(text)?.[1] ?? null) : null };
}

/**
 * Before `new` or `run` use `hosts`: a warning for each that runs another version, with the fix
 * line. Never stops the command (a host that cannot be asked is the command's own failure to report).
 */
export async function warnOtherVersions(command: string, hosts: readonly RemoteHost[], settings: SshSettings): Promise<void> {
  const answers = await Promise.all(hosts.map(async (host) => ({ host, answer: await remoteVersion(host, settings) })));
  for (const { host, answer } of answers) {
    if (answer.status !== 0 || answer.version === VERSION) continue;
    diagnose(`${command}: warning: ${host.key} runs ${JSON.stringify(answer.text.split("\n")[0] ?? "")}, this side is ${VERSION}: the daemon does not check, and a protocol change between them fails its calls; install the same version there: ${installThere(host, settings)}`);
  }
}
