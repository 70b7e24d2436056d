import * as v from "valibot";

/** The only protocol version this runtime speaks. */
export const PROTOCOL_VERSION = 1 as const;

/** `protocolVersion: 1`; other versions are caught earlier by `checkVersion`. */
export const protocolVersion = v.literal(PROTOCOL_VERSION);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * An open string → string map (workload env, lifecycleEnvironment).
 * Written by hand because `v.record` silently drops `__proto__`, `constructor` and
 * `prototype` keys; an env map must keep every key exactly. The value is passed through as
 * is (JSON.parse makes `__proto__` an ordinary own key, never a prototype).
 */
export const stringMap = v.custom<Record<string, string>>(
  (value) => isPlainObject(value) && firstNonString(value) === undefined,
  (issue) => {
    if (!isPlainObject(issue.input)) return `Invalid type: expected an object of strings, got ${jsonTypeName(issue.input)}`;
    const key = firstNonString(issue.input)!;
    return `value of ${quotableName(key) ?? `entry number ${Object.keys(issue.input).indexOf(key) + 1}`} must be a string, got ${jsonTypeName(issue.input[key])}`;
  },
);

/** Whether a diagnostic or the log may show an env entry's name: a variable name; anything else may be a pasted `NAME=secret`. */
export function isShowableName(key: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(key);
}

/** An env entry's name quoted for a diagnostic, or null when it may not be shown (isShowableName). */
export function quotableName(key: string): string | null {
  return isShowableName(key) ? JSON.stringify(key) : null;
}

/**
 * "null", "an array", "an object", "a string", … for diagnostics: what a diagnostic says of a
 * value it was given, since a value may be a secret (an env entry, a token in an option).
 */
export function jsonTypeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (value === undefined) return "nothing";
  if (value === "") return "an empty string";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * The message of a validation issue whose schema or check has none of its own (valibot's own
 * quotes the value): the expectation and the type that came, never the value. Given as the
 * `message` of every safeParse of outside input (protocol/errors.ts, options.ts).
 */
export function issueMessage(issue: v.BaseIssue<unknown>): string {
  const got = jsonTypeName(issue.input);
  const what = issue.kind === "schema" ? "type" : issue.type.replaceAll("_", " ");
  return issue.expected ? `Invalid ${what}: expected ${issue.expected}, got ${got}` : `Invalid ${what}: got ${got}`;
}

function firstNonString(map: Record<string, unknown>): string | undefined {
  return Object.keys(map).find((key) => typeof map[key] !== "string");
}

/** An open string → JSON map (`options`); values are whatever JSON carried. */
export const jsonMap = v.custom<Record<string, unknown>>(
  (value) => isPlainObject(value),
  "Invalid type: expected an object",
);

/**
 * `runtimeInstanceId` (later dialect): the hex SHA-256 of the daemon's home in practice, the same
 * for all its runtimes; the schema asks only for a non-empty string, as the daemon's own does.
 */
export const runtimeInstanceId = v.pipe(v.string(), v.minLength(1));

/** A non-negative integer. */
export const nonNegativeInt = v.pipe(v.number(), v.integer(), v.minValue(0));

/** Terminal dimension: a positive integer that fits the kernel's 16-bit winsize field. */
export const terminalSize = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535));
