/**
 * The one thing JSON.parse cannot see: a duplicate key. JSON.parse keeps the last value of a
 * repeated key; another parser may keep the first, so a message with a duplicate key means two
 * things at once (a smuggling vector between parsers). `parseMessage` (errors.ts) runs this on
 * every JSON text this runtime reads from outside: stdin, fd 3, and fd 4 in the tests' client.
 */

/** Where a duplicate key is: the path of the object holding it (valibot-style segments) and the key. */
export interface DuplicateKey {
  path: (string | number)[];
  key: string;
}

/** Objects with more keys than this are checked with a Set instead of a linear scan. */
const LINEAR_KEYS = 16;

const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/**
 * Whether `text` (valid JSON) repeats a key in some object; `value` is JSON.parse(text). Exact
 * and cheap: JSON.parse keeps one own property per distinct key of each object, so a repeat
 * shows as more key tokens in the text than keys in the value. Neither count allocates; only a
 * text that has a repeat pays for `findDuplicateKey`.
 */
export function hasDuplicateKey(text: string, value: unknown): boolean {
  return typeof value === "object" && value !== null && keyTokens(text) > ownKeys(value);
}

/** Number of object keys written in `text` (valid JSON): the strings a colon follows. */
function keyTokens(text: string): number {
  let count = 0;
  for (let at = 0; ; ) {
    const open = text.indexOf('"', at);
    if (open === -1) return count;
    const close = closingQuote(text, open);
    at = close + 1;
    if (isKey(text, at)) count++;
  }
}

/** Number of own keys of every object inside a parsed JSON value (no recursion: depth is the sender's choice). */
function ownKeys(value: object): number {
  let count = 0;
  let pending: object[] | null = null;
  for (let item: object | undefined = value; item !== undefined; item = pending?.pop()) {
    if (Array.isArray(item)) {
      for (const element of item) if (typeof element === "object" && element !== null) (pending ??= []).push(element);
      continue;
    }
    for (const key in item) {
      if (!Object.hasOwn(item, key)) continue;
      count++;
      const member = (item as Record<string, unknown>)[key];
      if (typeof member === "object" && member !== null) (pending ??= []).push(member);
    }
  }
  return count;
}

/**
 * The first key that occurs twice in one object of `text`, which must be valid JSON (JSON.parse
 * accepted it). Keys are compared decoded, as JSON.parse compares them: `"a"` and `"\u0061"` are
 * the same key. One pass: strings are skipped with indexOf, structure is read only between them.
 */
export function findDuplicateKey(text: string): DuplicateKey | null {
  const keys: string[] = []; // keys of the open objects, innermost last
  const starts: number[] = []; // per open container: where its keys begin in `keys`, -1 for an array
  const sets: (Set<string> | null)[] = []; // per open container: its keys once it has many
  const n = text.length;
  for (let at = 0; at < n; ) {
    const open = text.indexOf('"', at);
    const stop = open === -1 ? n : open;
    for (let i = at; i < stop; i++) {
      const c = text.charCodeAt(i);
      if (c === OPEN_OBJECT) {
        starts.push(keys.length);
        sets.push(null);
      } else if (c === OPEN_ARRAY) {
        starts.push(-1);
        sets.push(null);
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        const start = starts.pop()!;
        sets.pop();
        if (start >= 0) keys.length = start;
      }
    }
    if (open === -1) return null;
    const close = closingQuote(text, open);
    at = close + 1;
    if (!isKey(text, at)) continue;
    const raw = text.slice(open + 1, close);
    const key = raw.includes("\\") ? (JSON.parse(text.slice(open, close + 1)) as string) : raw;
    const top = starts.length - 1;
    const start = starts[top]!;
    let set = sets[top]!;
    if (set === null && keys.length - start >= LINEAR_KEYS) {
      set = new Set(keys.slice(start));
      sets[top] = set;
    }
    if (set !== null) {
      if (set.has(key)) return { path: pathAt(text, open), key };
      set.add(key);
      continue;
    }
    for (let i = start; i < keys.length; i++) if (keys[i] === key) return { path: pathAt(text, open), key };
    keys.push(key);
  }
  return null;
}

/** Index of the quote that closes the string opened at `open` (an escaped quote does not). */
function closingQuote(text: string, open: number): number {
  let close = text.indexOf('"', open + 1);
  while (text.charCodeAt(close - 1) === BACKSLASH) {
    let backslashes = 1;
    while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) break;
    close = text.indexOf('"', close + 1);
  }
  return close;
}

/** Whether the string that ended just before `at` is an object key (a `:` follows it). */
function isKey(text: string, at: number): boolean {
  let c = text.charCodeAt(at);
  while (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) c = text.charCodeAt(++at);
  return c === COLON;
}

/**
 * The path of the object that holds the string opening at `offset`: a second, slower pass run
 * only once a duplicate was found, so the hot loop above tracks no names or indices.
 */
function pathAt(text: string, offset: number): (string | number)[] {
  const stack: { array: boolean; index: number; key: string }[] = [];
  for (let at = 0; at < offset; ) {
    const open = text.indexOf('"', at);
    const stop = open === -1 || open > offset ? offset : open;
    for (let i = at; i < stop; i++) {
      const c = text.charCodeAt(i);
      if (c === OPEN_OBJECT || c === OPEN_ARRAY) stack.push({ array: c === OPEN_ARRAY, index: 0, key: "" });
      else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) stack.pop();
      else if (c === COMMA && stack.at(-1)?.array) stack.at(-1)!.index++;
    }
    if (stop === offset) break;
    const close = closingQuote(text, open);
    at = close + 1;
    const top = stack.at(-1);
    if (top && !top.array && isKey(text, at)) top.key = JSON.parse(text.slice(open, close + 1)) as string;
  }
  return stack.slice(0, -1).map((frame) => (frame.array ? frame.index : frame.key));
}
