import { CONTROL, CONTROL_CHARACTERS, escapeControl } from "./printable.ts";

/** What ANSI-C quoting escapes: the control characters, the quote and the backslash. */
const ESCAPED = new RegExp(`[${CONTROL_CHARACTERS}'\\\\]`, "g");

/**
 * A word as the shell reads it back: bare when safe, else single-quoted; with a control
 * character, ANSI-C quoted (`$'a\x1bb'`) so no escape sequence reaches the terminal raw.
 * For every command line the runtime suggests to a person, whoever named the path in it.
 */
export function shellQuote(word: string): string {
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  if (!CONTROL.test(word)) return `'${word.replaceAll("'", `'\\''`)}'`;
  const escaped = word.replace(ESCAPED, (char) => (char === "'" || char === "\\" ? `\\${char}` : escapeControl(char)));
  return `$'${escaped}'`;
}
