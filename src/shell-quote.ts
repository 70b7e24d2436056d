/** Control characters (C0, DEL, C1): never written raw to a person's terminal. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * A word as the shell reads it back: bare when safe, else single-quoted; with a control
 * character, ANSI-C quoted (`$'a\x1bb'`) so no escape sequence reaches the terminal raw.
 * For every command line the runtime suggests to a person, whoever named the path in it.
 */
export function shellQuote(word: string): string {
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  if (!CONTROL.test(word)) return `'${word.replaceAll("'", `'\\''`)}'`;
  const escaped = word.replace(/[\u0000-\u001f\u007f-\u009f'\\]/g, (char) => {
    if (char === "'" || char === "\\") return `\\${char}`;
    const code = char.charCodeAt(0);
    return code < 0x80 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
  return `$'${escaped}'`;
}
