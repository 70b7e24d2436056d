/**
 * Remote hosts as the operator names them (SSH_URL_GRAMMAR: every usage and error text shows it from here).
 * Parsed strictly, because every part ends up in an ssh command line: a host or user that ssh
 * could read as an option (`-oProxyCommand=…`) is refused here, not escaped later.
 */

/** How usage and error texts write the grammar of the host part: user and port are optional. */
export const SSH_HOST_GRAMMAR = "ssh://[user@]host[:port]";

/** How usage texts write the grammar of a remote host URL, the program's path included. */
export const SSH_URL_GRAMMAR = `${SSH_HOST_GRAMMAR}[/path/to/paseo-host-runtime]`;

/** The remote program when the URL names none: found on the remote user's PATH. */
export const DEFAULT_REMOTE_BINARY = "paseo-host-runtime";

/** One remote host. */
export interface RemoteHost {
  user: string | null;
  /** A host name, an IPv4 address, or an IPv6 address without its brackets. */
  host: string;
  port: number | null;
  /** The remote executable: an absolute path from the URL, else DEFAULT_REMOTE_BINARY. */
  binary: string;
  /** `user@host:port` without the program: what names the host in placements and diagnostics. */
  key: string;
}

const USER = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const IPV6 = /^[0-9A-Fa-f:.]+$/;

/** Why `text` is not a usable ssh URL, or null. */
function problem(text: string): string | null {
  if (!text.startsWith("ssh://")) return "it must start with ssh://";
  if (/[\s\0"'`$\\;&|<>?#%]/.test(text)) return "it must not contain whitespace, quotes or any of $ \\ ; & | < > ? # %";
  return null;
}

/** What parseSshUrl throws: the message says what is wrong with the URL. */
export class SshUrlError extends Error {}

/** Parses an ssh URL or throws an SshUrlError whose message says what is wrong with it. */
export function parseSshUrl(text: string): RemoteHost {
  const shape = `${SSH_HOST_GRAMMAR}[/absolute/path/to/paseo-host-runtime], got ${JSON.stringify(text)}`;
  const why = problem(text);
  if (why) throw new SshUrlError(`a remote must be ${shape}: ${why}`);
  const rest = text.slice("ssh://".length);
  const slash = rest.indexOf("/");
  const authority = slash === -1 ? rest : rest.slice(0, slash);
  const path = slash === -1 ? "" : rest.slice(slash);
  const at = authority.lastIndexOf("@");
  const user = at === -1 ? null : authority.slice(0, at);
  const hostPort = at === -1 ? authority : authority.slice(at + 1);
  if (user !== null && !USER.test(user)) throw new SshUrlError(`a remote must be ${shape}: the user must be letters, digits, "." "_" "-" (no password, no leading "-")`);
  let host: string;
  let portText: string | null = null;
  if (hostPort.startsWith("[")) {
    const close = hostPort.indexOf("]");
    host = close === -1 ? "" : hostPort.slice(1, close);
    const after = close === -1 ? "" : hostPort.slice(close + 1);
    if (close === -1 || !IPV6.test(host) || (after !== "" && !after.startsWith(":"))) throw new SshUrlError(`a remote must be ${shape}: a bracketed IPv6 address is malformed`);
    if (after !== "") portText = after.slice(1);
  } else {
    const colon = hostPort.indexOf(":");
    host = colon === -1 ? hostPort : hostPort.slice(0, colon);
    if (colon !== -1) portText = hostPort.slice(colon + 1);
    if (!NAME.test(host)) throw new SshUrlError(`a remote must be ${shape}: the host must be a name or an address (letters, digits, "." "-", not starting with "-")`);
  }
  let port: number | null = null;
  if (portText !== null) {
    port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : NaN;
    if (!(port >= 1 && port <= 65535)) throw new SshUrlError(`a remote must be ${shape}: the port must be a number from 1 to 65535`);
  }
  if (path.split("/").includes("..") || path.includes("//")) throw new SshUrlError(`a remote must be ${shape}: the program path must be a plain absolute path`);
  const binary = path === "" || path === "/" ? DEFAULT_REMOTE_BINARY : path;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  const key = `${user === null ? "" : `${user}@`}${shownHost}${port === null ? "" : `:${port}`}`;
  return { user, host, port, binary, key };
}

/** True when `text` parses as an ssh URL. */
export function isSshUrl(text: string): boolean {
  try {
    parseSshUrl(text);
    return true;
  } catch (error) {
    if (error instanceof SshUrlError) return false;
    throw error;
  }
}
