/**
 * Text meant for a person's terminal. Anything this runtime prints for people (diagnostics,
 * `logs`, `ls`, `ps`, `doctor`) may carry what others chose: a workspace or exec id, a path, a
 * workload's argv, a remote host's answer. A control character there could forge a line (a
 * newline) or steer the terminal (ESC, OSC, BEL, C1 CSI); so every such field passes through
 * `printable` before it is written, and JSON for people through `terminalJson`.
 */

/**
 * What reorders or breaks what a person reads without being a control character: the bidi
 * marks, embeddings, overrides and isolates (an id whose text runs backwards) and the Unicode
 * line and paragraph separators.
 */
const FORMAT_CHARACTERS = String.raw`\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069`;
/** The characters of CONTROL, for a character class of one's own. */
export const CONTROL_CHARACTERS = String.raw`\u0000-\u001f\u007f-\u009f${FORMAT_CHARACTERS}`;
/** Control characters (C0, DEL, C1) and the format characters above: never written raw to a person's terminal. */
export const CONTROL = new RegExp(`[${CONTROL_CHARACTERS}]`);
const CONTROLS = new RegExp(CONTROL.source, "g");

/** `\xHH` for C0 and DEL, `\uHHHH` for the others. */
export function escapeControl(char: string): string {
  const code = char.charCodeAt(0);
  return code < 0x80 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** `text` with every control character shown as `\xHH` / `\uHHHH`: one line, nothing the terminal obeys. */
export function printable(text: string): string {
  return CONTROL.test(text) ? text.replace(CONTROLS, escapeControl) : text;
}

const RAW_IN_JSON = new RegExp(String.raw`[\u007f-\u009f${FORMAT_CHARACTERS}]`, "g");

/**
 * JSON text for a terminal: DEL, the C1 controls (U+007F to U+009F) and the format characters,
 * which JSON.stringify leaves raw and terminals obey, written as \u escapes. The same JSON value.
 */
export function terminalJson(json: string): string {
  return json.replace(RAW_IN_JSON, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * Text from elsewhere (a remote host's stderr) for a terminal: its lines kept, a line ending in
 * CR LF (ssh ends its own messages so) as one line, every other control character escaped.
 */
export function printableLines(text: string): string {
  return CONTROL.test(text) ? text.split(/\r?\n/).map(printable).join("\n") : text;
}

/**
 * printableLines of a byte stream, chunk by chunk: a UTF-8 sequence split between two chunks is
 * decoded whole, and a CR that ends a chunk waits for the next, which may start with its LF.
 */
export function printableStream(): (chunk: Uint8Array) => string {
  const decoder = new TextDecoder();
  let held = "";
  return (chunk) => {
    const text = held + decoder.decode(chunk, { stream: true });
    held = text.endsWith("\r") ? "\r" : "";
    return printableLines(held ? text.slice(0, -1) : text);
  };
}
