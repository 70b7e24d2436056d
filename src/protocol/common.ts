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
 * `prototype` keys; an env map must keep every key exactly.
 */
export const stringMap = v.custom<Record<string, string>>(
  (value) => isPlainObject(value) && Object.values(value).every((item) => typeof item === "string"),
  "Invalid type: expected an object whose values are all strings",
);

/** An open string → JSON map (`options`); values are whatever JSON carried. */
export const jsonMap = v.custom<Record<string, unknown>>(
  (value) => isPlainObject(value),
  "Invalid type: expected an object",
);

/** A non-negative integer. */
export const nonNegativeInt = v.pipe(v.number(), v.integer(), v.minValue(0));

/** Terminal dimension: a positive integer that fits the kernel's 16-bit winsize field. */
export const terminalSize = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535));
