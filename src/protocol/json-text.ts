/**
 * JSON text → value, as this runtime reads every JSON text from outside (requests, envelopes,
 * controls, our remote side's answers, option flags, the daemon's config.json). Two things
 * JSON.parse does not do:
 * - a syntax error says where the text broke (byte offset) and what was expected there, never
 *   the text itself: the engine's message quotes it (`Unexpected identifier "ghp_…"`), and a
 *   request or envelope carries environments and tokens;
 * - a value nested deeper than MAX_JSON_DEPTH is refused, before anything recurses into it
 *   (JSON.parse accepts a million levels; JSON.stringify and structuredClone then overflow).
 */
import { LimitError, ProtocolError } from "./protocol-error.ts";

/** The deepest nesting of arrays and objects accepted; real messages nest a handful of levels. */
export const MAX_JSON_DEPTH = 128;

/** Parses `text`, throwing a ProtocolError (syntax) or LimitError (nesting) that quotes none of it. */
export function parseJsonText(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw new ProtocolError(`malformed JSON ${syntaxProblem(text)}`);
  }
  if (opensMoreThan(text, MAX_JSON_DEPTH) && nestedDeeperThan(value, MAX_JSON_DEPTH)) throw new LimitError(`nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
  return value;
}

/**
 * Whether `text` has more than `max` opening brackets at all (strings included): only then can
 * it nest that deep. Two native scans, so a message of ordinary size never pays for the walk.
 */
function opensMoreThan(text: string, max: number): boolean {
  let count = 0;
  for (const bracket of ["{", "["]) {
    for (let at = text.indexOf(bracket); at !== -1; at = text.indexOf(bracket, at + 1)) if (++count > max) return true;
  }
  return false;
}

/** Whether `value` nests arrays and objects more than `max` levels (no recursion: depth is the sender's choice). */
function nestedDeeperThan(value: unknown, max: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  const pending: [object, number][] = [[value, 1]];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const [container, depth] = item;
    if (depth > max) return true;
    for (const member of Array.isArray(container) ? container : Object.values(container)) {
      if (typeof member === "object" && member !== null) pending.push([member, depth + 1]);
    }
  }
  return false;
}

/** What a scan expects next. */
type Want = "value" | "first-member" | "key" | "colon" | "after-member" | "first-element" | "after-element" | "end";

const EXPECTED: Record<Want, string> = {
  value: "a JSON value",
  "first-member": 'a key in double quotes or "}"',
  key: "a key in double quotes",
  colon: '":" after the key',
  "after-member": '"," or "}"',
  "first-element": 'a JSON value or "]"',
  "after-element": '"," or "]"',
  end: "nothing more after the JSON value",
};

/**
 * `at byte N: expected …` for the first place `text` stops being JSON (RFC 8259). Iterative,
 * like the depth check. Run only after JSON.parse refused the text; if this scan finds nothing
 * (an engine stricter than the grammar), it says so without a place.
 */
export function syntaxProblem(text: string): string {
  const found = firstProblem(text);
  if (found === null) return "(JSON.parse refused it; no position found)";
  const bytes = new TextEncoder().encode(text.slice(0, found.at)).length;
  return found.at >= text.length ? `at byte ${bytes} (the end of the text): expected ${found.expected}` : `at byte ${bytes}: expected ${found.expected}`;
}

function firstProblem(text: string): { at: number; expected: string } | null {
  const stack: ("object" | "array")[] = [];
  let want: Want = "value";
  let at = 0;
  const fail = (expected: string) => ({ at, expected });
  for (;;) {
    while (at < text.length && " \t\n\r".includes(text[at]!)) at++;
    if (at >= text.length) return want === "end" ? null : fail(EXPECTED[want]);
    const c = text[at]!;
    if (want === "end") return fail(EXPECTED.end);
    if (want === "colon") {
      if (c !== ":") return fail(EXPECTED.colon);
      at++;
      want = "value";
      continue;
    }
    if (want === "after-member" || want === "after-element") {
      const close = want === "after-member" ? "}" : "]";
      if (c === ",") {
        at++;
        want = want === "after-member" ? "key" : "value";
      } else if (c === close) {
        at++;
        stack.pop();
        want = afterValue(stack);
      } else return fail(EXPECTED[want]);
      continue;
    }
    if (want === "first-member" || want === "key") {
      if (want === "first-member" && c === "}") {
        at++;
        stack.pop();
        want = afterValue(stack);
        continue;
      }
      if (c !== '"') return fail(EXPECTED[want]);
      const end = stringEnd(text, at);
      if (typeof end !== "number") return end;
      at = end;
      want = "colon";
      continue;
    }
    // A value (possibly the first element of an array).
    if (want === "first-element" && c === "]") {
      at++;
      stack.pop();
      want = afterValue(stack);
      continue;
    }
    if (c === "{" || c === "[") {
      stack.push(c === "{" ? "object" : "array");
      at++;
      want = c === "{" ? "first-member" : "first-element";
      continue;
    }
    const end = c === '"' ? stringEnd(text, at) : c === "-" || (c >= "0" && c <= "9") ? numberEnd(text, at) : literalEnd(text, at);
    if (typeof end !== "number") return end;
    at = end;
    want = afterValue(stack);
  }
}

function afterValue(stack: readonly ("object" | "array")[]): Want {
  const top = stack.at(-1);
  return top === undefined ? "end" : top === "object" ? "after-member" : "after-element";
}

/** Index just past the string opening at `open`, or the problem inside it. */
function stringEnd(text: string, open: number): number | { at: number; expected: string } {
  for (let at = open + 1; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (c === 0x22) return at + 1;
    if (c < 0x20) return { at, expected: "an escape (\\n, \\t, \\u00XX) instead of a raw control character in the string" };
    if (c !== 0x5c) continue;
    const next = text[at + 1];
    if (next !== undefined && '"\\/bfnrt'.includes(next)) {
      at++;
      continue;
    }
    if (next === "u" && /^[0-9A-Fa-f]{4}$/.test(text.slice(at + 2, at + 6))) {
      at += 5;
      continue;
    }
    return { at, expected: 'a valid escape in the string (\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u and four hex digits)' };
  }
  return { at: text.length, expected: "the closing double quote of the string" };
}

const NUMBER = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;

/** Index just past the number starting at `start`, or where it broke. */
function numberEnd(text: string, start: number): number | { at: number; expected: string } {
  NUMBER.lastIndex = start;
  const match = NUMBER.exec(text);
  if (match === null) return { at: start + 1, expected: "a digit" };
  const end = NUMBER.lastIndex;
  const next = text[end];
  if (next === "." || next === "e" || next === "E") return { at: end + 1, expected: "a digit" };
  return end;
}

/** Index just past `true`, `false` or `null` at `start`, or the problem. */
function literalEnd(text: string, start: number): number | { at: number; expected: string } {
  for (const word of ["true", "false", "null"]) if (text.startsWith(word, start)) return start + word.length;
  return { at: start, expected: "a JSON value (an object, array, string, number, true, false or null)" };
}
