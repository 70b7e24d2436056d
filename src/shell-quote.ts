import { CONTROL, CONTROL_CHARACTERS, escapeControl } from "./printable.ts";

/** What ANSI-C quoting escapes: the control characters, the quote and the backslash. */
const ESCAPED = new RegExp(`[${CONTROL_CHARACTERS}'\\\\]`, "g");

/** What any POSIX shell reads as itself, unquoted. */
const BARE = /^[\w@%+=:,./-]+$/;

/**
 * A word as any POSIX sh reads it back: bare when safe, else single-quoted. For a command a
 * shell runs (sshd runs a remote command through the user's shell, which may be dash: no `$'…'`).
 */
export function posixQuote(word: string): string {
  return BARE.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * A word as the shell reads it back: posixQuote; with a control character, ANSI-C quoted
 * (`$'a\x1bb'`) so no escape sequence reaches the terminal raw.
 * For every command line the runtime suggests to a person, whoever named the path in it.
 */
export function shellQuote(word: string): string {
  if (!CONTROL.test(word)) return posixQuote(word);
  const escaped = word.replace(ESCAPED, (char) => (char === "'" || char === "\\" ? `\\${char}` : escapeControl(char)));
  return `$'${escaped}'`;
}
