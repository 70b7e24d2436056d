import { CONTROL, escapeControl } from "./printable.ts";

/**
 * A word as the shell reads it back: bare when safe, else single-quoted; with a control
 * character, ANSI-C quoted (`$'a\x1bb'`) so no escape sequence reaches the terminal raw.
 * For every command line the runtime suggests to a person, whoever named the path in it.
 */
export function shellQuote(word: string): string {
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  if (!CONTROL.test(word)) return `'${word.replaceAll("'", `'\\''`)}'`;
  const escaped = word.replace(/[\u0000-\u001f\u007f-\u009f'\\]/g, (char) => (char === "'" || char === "\\" ? `\\${char}` : escapeControl(char)));
  return `$'${escaped}'`;
}
