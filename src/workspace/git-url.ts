/**
 * What git makes of a URL, decided the way git itself decides (transport.c, connect.c): which
 * transport it uses, and the credential an http(s) URL carries. Refused here, before anything
 * is written: a transport the operator does not allow, and credentials git could not use safely.
 */
import { redactCredentials } from "../redact.ts";
import type { GitCredential } from "./git-environment.ts";

/** How a URL names its transport. */
type Form = "helper" | "url" | "scp" | "path";

/** A URL's transport, by git's name for it (the name `protocol.<name>.allow` uses). */
interface GitTransport {
  protocol: string;
  form: Form;
}

/** git's URL scheme characters (is_urlschemechar): a letter or digit, then also + - . */
const SCHEME = /^[A-Za-z0-9][A-Za-z0-9+.-]*/;

/** Old spellings of ssh:// that git still accepts. */
const SSH_ALIASES = ["git+ssh", "ssh+git"];

/**
 * The transport git would use for `url`: `<transport>::<address>` names a remote helper;
 * `scheme://` is that scheme (git+ssh and ssh+git are ssh); a string with no colon, or a slash
 * before its first colon, is a local path (file); what precedes any other "://" is taken as a
 * scheme, as git does; anything else is scp-like `[user@]host:path` (ssh).
 */
export function gitTransport(url: string): GitTransport {
  const scheme = SCHEME.exec(url)?.[0] ?? "";
  // An empty helper name ("::x") is still helper syntax to git (it runs `git remote-`).
  if (url.startsWith("::", scheme.length)) return { protocol: scheme, form: "helper" };
  if (scheme && url.startsWith("://", scheme.length)) return { protocol: SSH_ALIASES.includes(scheme) ? "ssh" : scheme, form: "url" };
  const colon = url.indexOf(":");
  const slash = url.indexOf("/");
  if (colon < 0 || (slash >= 0 && slash < colon)) return { protocol: "file", form: "path" };
  // git still reads "<not a scheme>://…" as a scheme (and refuses it as unsupported).
  const separator = url.indexOf("://");
  if (separator >= 0) return { protocol: url.slice(0, separator), form: "url" };
  return { protocol: "ssh", form: "scp" };
}

const FORM_NAMES: Record<Form, (protocol: string) => string> = {
  helper: (protocol) => `remote-helper syntax "${protocol}::…"`,
  url: (protocol) => `URL scheme "${protocol}://"`,
  scp: () => 'scp-like "host:path", which is ssh',
  path: () => "a local path, which is file",
};

/**
 * Checks a git URL the runtime will hand to git: its transport is allowed, its host cannot be
 * read as an option, a local path is absolute, and its credentials are usable (see
 * splitCredential). Returns the transport.
 */
export function checkGitUrl(url: string, what: string, allowed: readonly string[]): GitTransport {
  const transport = gitTransport(url);
  const shown = JSON.stringify(redactCredentials(url));
  if (!allowed.includes(transport.protocol)) {
    const list = allowed.length === 0 ? "none" : allowed.join(", ");
    throw new Error(`${what} ${shown} uses the git transport "${transport.protocol}" (${FORM_NAMES[transport.form](transport.protocol)}), which options.allowedGitProtocols does not allow (allowed: ${list})`);
  }
  if (transport.form === "path" && !url.startsWith("/")) throw new Error(`${what} ${shown} is a relative local path; a local repository must be given as an absolute path or a file:// URL`);
  const host = hostOf(url, transport);
  if (host.startsWith("-")) throw new Error(`${what} ${shown} names a host starting with "-", which ssh would read as an option`);
  if (host === "" && (transport.form === "scp" || (transport.form === "url" && transport.protocol !== "file"))) throw new Error(`${what} ${shown} names no host`);
  splitCredential(url, what);
  return transport;
}

/** The host part git connects to (after any userinfo), "" when the URL has none. */
function hostOf(url: string, transport: GitTransport): string {
  if (transport.form === "url") return afterUserinfo(authorityOf(url));
  if (transport.form === "scp") return afterUserinfo(url.slice(0, url.indexOf(":")));
  return "";
}

/** The authority of a `scheme://` URL: up to the first "/", "?" or "#" (as git reads it). */
function authorityOf(url: string): string {
  const start = url.indexOf("://") + 3;
  const rest = url.slice(start);
  const end = rest.search(/[/?#]/);
  return end < 0 ? rest : rest.slice(0, end);
}

function afterUserinfo(authority: string): string {
  return authority.slice(authority.lastIndexOf("@") + 1);
}

/** Protocols whose userinfo git can use as a credential (through curl). */
const CREDENTIAL_PROTOCOLS = ["https", "http"];

/**
 * Takes the credential out of an http(s) URL: the URL git and the store get has no userinfo;
 * the credential (percent-decoded, as git decodes it) goes to git through its environment.
 * An ssh URL keeps its login name (not a secret) and may not carry a password: ssh runs in
 * batch mode. Userinfo in any other URL is refused: nothing there could use it.
 */
export function splitCredential(url: string, what: string): { url: string; credential: GitCredential | null } {
  const transport = gitTransport(url);
  if (transport.form !== "url") return { url, credential: null };
  const authority = authorityOf(url);
  const at = authority.indexOf("@");
  if (at < 0) return { url, credential: null };
  if (authority.indexOf("@", at + 1) >= 0) throw new Error(`${what} has more than one "@" before its host; write an "@" inside a username or password as %40`);
  const userinfo = authority.slice(0, at);
  const colon = userinfo.indexOf(":");
  if (transport.protocol === "ssh") {
    if (colon >= 0) throw new Error(`${what} carries a password in an ssh URL; git runs ssh in batch mode, so use an ssh key or agent instead`);
    return { url, credential: null };
  }
  if (!CREDENTIAL_PROTOCOLS.includes(transport.protocol)) {
    throw new Error(`${what} carries credentials in a ${transport.protocol} URL, which git cannot use; only http and https URLs carry credentials`);
  }
  const start = url.indexOf("://") + 3;
  const host = authority.slice(at + 1);
  return {
    url: `${url.slice(0, start)}${host}${url.slice(start + authority.length)}`,
    credential: {
      protocol: transport.protocol,
      host,
      username: decoded(colon < 0 ? userinfo : userinfo.slice(0, colon), what),
      password: colon < 0 ? "" : decoded(userinfo.slice(colon + 1), what),
    },
  };
}

function decoded(text: string, what: string): string {
  let value: string;
  try {
    value = decodeURIComponent(text);
  } catch (error) {
    if (!(error instanceof URIError)) throw error;
    throw new Error(`${what} has a malformed %-escape in its credentials`);
  }
  if (/[\0\r\n]/.test(value)) throw new Error(`${what} has a NUL or line break in its credentials, which git refuses`);
  return value;
}
