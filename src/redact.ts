/**
 * Credentials never leave the process in text we write: a URL's userinfo (`user:token@`) is
 * replaced before any diagnostic reaches stderr or the runtime log.
 */

/** `scheme://userinfo@` inside any text; the scheme is kept so the URL stays recognisable. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@'"]+@/gi;

/** `text` with every URL's userinfo replaced by `***`. */
export function redactCredentials(text: string): string {
  return text.replace(URL_USERINFO, "$1***@");
}
