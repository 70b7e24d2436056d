/**
 * Credentials never leave the process in text we write: a URL's userinfo (`user:token@`) is
 * replaced before any diagnostic reaches stderr or the runtime log.
 */

/**
 * `scheme://userinfo@` inside any text; the scheme is kept so the URL stays recognisable. Not
 * `scheme://[…@]`: in a URL a bracket right after `//` opens an IP-literal host, which holds no
 * `@`, and a host follows a userinfo, never `]`; that is the grammar's optional part, as usage
 * texts write it (`ssh://[user@]host`), and it is not a value.
 */
const URL_USERINFO = /\b([a-z0-9][a-z0-9+.-]*:\/\/)(?!\[[^\s/?#@'"\]]*@\])[^\s/?#@'"]+@/gi;

/**
 * A URL's query (`?access_token=…`): some hosts take a token there. Kept up to the `?` so the
 * URL stays recognisable; the fragment goes with it.
 */
const URL_QUERY = /\b([a-z0-9][a-z0-9+.-]*:\/\/[^\s?#'"]*)\?[^\s'"]*/gi;

/** `text` with every URL's userinfo and query replaced by `***`. */
export function redactCredentials(text: string): string {
  return text.replace(URL_USERINFO, "$1***@").replace(URL_QUERY, "$1?***");
}

/** `scheme://` and the authority that follows, at the start of a string. */
const URL_AUTHORITY = /^([a-z0-9][a-z0-9+.-]*:\/\/)([^/?#]*)/i;

/** Schemes whose userinfo is an ssh login name: not a secret, and needed to connect. */
const SSH_SCHEMES = ["ssh://", "git+ssh://", "ssh+git://"];

/**
 * A URL without the secret part of its userinfo: all of it, except an ssh login name (its
 * password still goes). Any string that does not start with `scheme://` comes back unchanged.
 * This is what is stored of a URL.
 */
export function withoutUrlCredentials(value: string): string {
  const match = URL_AUTHORITY.exec(value);
  if (!match) return value;
  const [whole, scheme, authority] = match as unknown as [string, string, string];
  const at = authority.lastIndexOf("@");
  if (at < 0) return value;
  const userinfo = authority.slice(0, at);
  const login = SSH_SCHEMES.includes(scheme.toLowerCase()) ? `${userinfo.split(":")[0]}@` : "";
  return `${scheme}${login}${authority.slice(at + 1)}${value.slice(whole.length)}`;
}

/** `value` with withoutUrlCredentials applied to every string in it (objects and arrays are copies). */
export function scrubUrlCredentials<T>(value: T): T {
  if (typeof value === "string") return withoutUrlCredentials(value) as T;
  if (Array.isArray(value)) return value.map((item) => scrubUrlCredentials(item)) as T;
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, scrubUrlCredentials(item)])) as T;
  }
  return value;
}
