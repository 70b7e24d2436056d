/**
 * A JSON object with a duplicate key is refused with its path, wherever JSON comes in
 * (JSON.parse alone would keep the last value: a smuggling vector between parsers).
 */
import { describe, expect, test } from "bun:test";
import { Control, FrameDecoder, LifecycleRequest, ProcessEvent, findDuplicateKey, hasDuplicateKey, parseMessage, type DuplicateKey } from "../../src/protocol/index.ts";
import { seededRandom } from "../../bench/stats.ts";

/**
 * The reference: a plain recursive-descent JSON reader that records every object's keys as it
 * decodes them and reports the first repeat, with its path. Slow and obviously right.
 */
function referenceDuplicate(text: string): DuplicateKey | null {
  let at = 0;
  const ws = () => {
    while (" \t\n\r".includes(text[at]!) && at < text.length) at++;
  };
  const string = (): string => {
    const start = at;
    at++;
    while (text[at] !== '"') at += text[at] === "\\" ? 2 : 1;
    at++;
    return JSON.parse(text.slice(start, at)) as string;
  };
  const value = (path: (string | number)[]): DuplicateKey | null => {
    ws();
    const c = text[at];
    if (c === "{") {
      at++;
      const seen = new Set<string>();
      ws();
      if (text[at] === "}") return at++, null;
      for (;;) {
        ws();
        const key = string();
        if (seen.has(key)) return { path, key };
        seen.add(key);
        ws();
        at++; // ':'
        const inner = value([...path, key]);
        if (inner) return inner;
        ws();
        if (text[at++] === "}") return null;
      }
    }
    if (c === "[") {
      at++;
      ws();
      if (text[at] === "]") return at++, null;
      for (let index = 0; ; index++) {
        const inner = value([...path, index]);
        if (inner) return inner;
        ws();
        if (text[at++] === "]") return null;
      }
    }
    if (c === '"') return string(), null;
    while (at < text.length && !",]} \t\n\r".includes(text[at]!)) at++;
    return null;
  };
  return value([]);
}

/** JSON text for `key`, with some characters written as escapes (so equal keys look different). */
function encodeKey(key: string, random: () => number): string {
  const hex = (unit: number) => {
    const digits = unit.toString(16).padStart(4, "0");
    return `\\u${random() < 0.5 ? digits : digits.toUpperCase()}`;
  };
  let out = '"';
  for (const ch of key) {
    const r = random();
    if (r < 0.2) out += [...Array(ch.length).keys()].map((i) => hex(ch.charCodeAt(i))).join("");
    else if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else if (ch === "/" && r < 0.4) out += "\\/";
    else out += ch;
  }
  return `${out}"`;
}

const KEY_ALPHABET = ["a", "b", "k", '"', "\\", "/", "é", "😀", "{", "}", ":", ",", "[", "]", " "];

/** A random JSON text of objects and arrays whose keys often repeat, with random whitespace. */
function randomJson(random: () => number, depth = 0): string {
  const space = () => (random() < 0.2 ? [" ", "\n", "\t", "\r\n "][Math.floor(random() * 4)]! : "");
  const leaf = () => {
    const r = random();
    if (r < 0.3) return encodeKey(randomKey(random), random);
    if (r < 0.5) return String(Math.floor(random() * 1e6) / 100);
    return ["true", "false", "null", "-1e-3", '"\\\\"', '"a\\"b"'][Math.floor(random() * 6)]!;
  };
  const r = random();
  if (depth > 4 || r < 0.25) return leaf();
  const count = Math.floor(random() * (random() < 0.1 ? 40 : 5));
  if (r < 0.45) return `[${space()}${Array.from({ length: count }, () => randomJson(random, depth + 1)).join(`${space()},${space()}`)}${space()}]`;
  const entries = Array.from({ length: count }, () => `${space()}${encodeKey(randomKey(random), random)}${space()}:${space()}${randomJson(random, depth + 1)}`);
  return `{${entries.join(",")}${space()}}`;
}

function randomKey(random: () => number): string {
  const length = Math.floor(random() * 3);
  return Array.from({ length }, () => KEY_ALPHABET[Math.floor(random() * KEY_ALPHABET.length)]).join("");
}

describe("hasDuplicateKey (the fast check) and findDuplicateKey (the path) are exact", () => {
  const cases: [string, string, DuplicateKey | null][] = [
    ["a plain repeat", `{"a":1,"a":2}`, { path: [], key: "a" }],
    ["the same key written with a \\u escape", `{"a":1,"\\u0061":2}`, { path: [], key: "a" }],
    ["upper-case hex in the escape", `{"\\u00E9":1,"é":2}`, { path: [], key: "é" }],
    ["an escaped quote inside the key", `{"a\\"b":1,"a\\u0022b":2}`, { path: [], key: 'a"b' }],
    ["a key ending in a backslash", `{"a\\\\":1,"a\\u005c":2}`, { path: [], key: "a\\" }],
    ["two backslashes are not one", `{"a\\\\":1,"a\\\\\\\\":2}`, null],
    ["a solidus escape", `{"/":1,"\\/":2}`, { path: [], key: "/" }],
    ["a surrogate pair and its escape", `{"😀":1,"\\ud83d\\ude00":2}`, { path: [], key: "😀" }],
    ["two different lone surrogates", `{"\\ud800":1,"\\udc00":2}`, null],
    ["the empty key twice", `{"":1,"":2}`, { path: [], key: "" }],
    ["__proto__ twice", `{"__proto__":{},"__proto__":1}`, { path: [], key: "__proto__" }],
    ["whitespace everywhere", ` { "a" : 1 ,\n\t"a"\r\n: 2 } `, { path: [], key: "a" }],
    ["nested", `{"x":{"y":1,"y":2}}`, { path: ["x"], key: "y" }],
    ["in an array of objects", `{"list":[{"k":1},{"k":2,"k":3}]}`, { path: ["list", 1], key: "k" }],
    ["deep in arrays", `{"a":[[1,{"b":[{},{"c":0,"c":1}]}]]}`, { path: ["a", 0, 1, "b", 1], key: "c" }],
    ["the same key in different objects", `{"a":{"k":1},"b":{"k":1},"k":0}`, null],
    ["a key after a nested object that had it", `{"a":{"b":1},"b":2}`, null],
    ["keys equal to values", `{"a":"b","b":"a"}`, null],
    ["structure inside value strings", `{"a":"}{:\\",","b":"[{\\"a\\":1,\\"a\\":2}]"}`, null],
    ["a value string then the repeat", `{"a":"}","a":1}`, { path: [], key: "a" }],
    ["a repeat after many keys (set path)", `{${Array.from({ length: 100 }, (_, i) => `"k${i}":${i}`).join(",")},"k3":0}`, { path: [], key: "k3" }],
    ["many distinct keys", `{${Array.from({ length: 100 }, (_, i) => `"k${i}":${i}`).join(",")}}`, null],
    ["not an object", `[1,"a","a"]`, null],
  ];

  test.each(cases)("%s", (_, text, expected) => {
    const value = JSON.parse(text); // every case is valid JSON
    expect(findDuplicateKey(text)).toEqual(expected);
    expect(hasDuplicateKey(text, value)).toBe(expected !== null);
    expect(referenceDuplicate(text)).toEqual(expected);
  });

  test("deep nesting: 5000 levels", () => {
    const text = `${'{"a":['.repeat(5000)}{"z":1,"z":2}${"]}".repeat(5000)}`;
    const found = findDuplicateKey(text);
    expect(found?.key).toBe("z");
    expect(found?.path).toHaveLength(10_000);
    expect(hasDuplicateKey(text, JSON.parse(text))).toBe(true);
  });

  test("a huge object is checked in linear time (a quadratic scan would take minutes)", () => {
    const text = `{${Array.from({ length: 200_000 }, (_, i) => `"k${i}":0`).join(",")},"k199999":1}`;
    expect(findDuplicateKey(text)).toEqual({ path: [], key: "k199999" });
    expect(hasDuplicateKey(text, JSON.parse(text))).toBe(true);
  });

  const TRIALS = process.env.PASEO_STRESS === "1" ? 50_000 : 3000;
  test(`agrees with the reference reader on ${TRIALS} random documents`, () => {
    const random = seededRandom(17);
    let duplicates = 0;
    for (let i = 0; i < TRIALS; i++) {
      const text = randomJson(random);
      const value = JSON.parse(text);
      const expected = referenceDuplicate(text);
      if (expected) duplicates++;
      expect(findDuplicateKey(text)).toEqual(expected);
      expect(hasDuplicateKey(text, value)).toBe(expected !== null);
    }
    // The generator must produce both outcomes often, or the comparison proves little.
    expect(duplicates).toBeGreaterThan(TRIALS / 10);
    expect(duplicates).toBeLessThan(TRIALS * 0.9);
  });
});

describe("every message parser refuses a duplicate key, with its path", () => {
  test("a lifecycle request (stdin), at the top and in options", () => {
    expect(() => parseMessage(LifecycleRequest, `{"protocolVersion":1,"protocolVersion":1,"options":{}}`, "lifecycle request")).toThrow(
      'invalid lifecycle request: duplicate key "protocolVersion" (a JSON object must not repeat a key)',
    );
    expect(() => parseMessage(LifecycleRequest, `{"protocolVersion":1,"options":{"owner":"alice","owner":"bob"}}`, "lifecycle request")).toThrow(
      'invalid lifecycle request: options: duplicate key "owner"',
    );
  });

  test("the instance id cannot be smuggled twice", () => {
    expect(() => parseMessage(LifecycleRequest, `{"protocolVersion":1,"runtimeInstanceId":"a","runtimeInstanceId":"b","options":{}}`, "lifecycle request")).toThrow(
      'invalid lifecycle request: duplicate key "runtimeInstanceId"',
    );
  });

  test("an fd 3 frame, in env, with the frame number", () => {
    const decoder = new FrameDecoder(Control, "fd 3 control");
    const text = `{"type":"spawn","protocolVersion":1,"argv":["x"],"env":{"PATH":"/bin","PATH":"/tmp/evil"},"purpose":{"kind":"git"},"options":{},"execId":"e","stdio":{"kind":"pipes"}}\n`;
    expect(() => decoder.push(Buffer.from(text))).toThrow('fd 3 control frame 1: invalid fd 3 control: env: duplicate key "PATH" (a JSON object must not repeat a key)');
  });

  test("an fd 4 event (the tests' daemon-like client shares the decoder)", () => {
    const decoder = new FrameDecoder(ProcessEvent, "fd 4 event");
    expect(() => decoder.push(Buffer.from(`{"type":"exit","protocolVersion":1,"code":0,"signal":null,"code":1}\n`))).toThrow(
      'fd 4 event frame 1: invalid fd 4 event: duplicate key "code"',
    );
  });

  test("a frame in a multi-frame chunk is named by its number", () => {
    const decoder = new FrameDecoder(Control, "fd 3 control");
    const ok = `{"type":"resize","protocolVersion":1,"id":1,"rows":2,"cols":3}`;
    expect(() => decoder.push(Buffer.from(`${ok}\n${ok}\n{"type":"resize","protocolVersion":1,"id":1,"id":2,"rows":2,"cols":3}\n`))).toThrow(
      'fd 3 control frame 3: invalid fd 3 control: duplicate key "id"',
    );
  });
});
