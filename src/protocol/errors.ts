import * as v from "valibot";
import { PROTOCOL_VERSION, issueMessage, jsonTypeName } from "./common.ts";
import { DIALECT_KEY, DIALECT_SIGN, dialectOf, isDetected, otherDialect, type Detected, type Dialect } from "./dialect.ts";
import { findDuplicateKey, hasDuplicateKey } from "./json.ts";
import { parseJsonText } from "./json-text.ts";
import { ProtocolError, prefixed } from "./protocol-error.ts";

export { LimitError, ProtocolError, prefixed } from "./protocol-error.ts";

/** Turns one valibot issue into `path: what was wrong` (no path prefix at the top level). */
function describeIssue(issue: v.BaseIssue<unknown>): string {
  const path = v.getDotPath(issue);
  const at = (text: string, where: string | null) => (where ? `${where}: ${text}` : text);
  if (issue.type === "strict_object" && issue.expected === "never") {
    const key = String(issue.path?.at(-1)?.key);
    const parent = issue.path && issue.path.length > 1 ? v.getDotPath({ ...issue, path: issue.path.slice(0, -1) } as v.BaseIssue<unknown>) : null;
    return at(`unknown key ${JSON.stringify(key)}`, parent);
  }
  if (issue.received === "undefined" && issue.path?.length) {
    return at("required key is missing", path);
  }
  return at(issue.message, path);
}

/**
 * For a variant, the one option its discriminator names, else the schema itself. Validating
 * against that option alone gives the same output and issue paths as the variant, about 3x
 * faster (bench/README.md, parser); an unknown tag falls back to the variant for its message.
 */
function narrowVariant(schema: v.GenericSchema, value: unknown): v.GenericSchema {
  if (schema.type !== "variant" || !isJsonObject(value)) return schema;
  const { key, options } = schema as unknown as { key: string; options: v.GenericSchema[] };
  const tag = value[key];
  for (const option of options) {
    const entry = (option as unknown as { entries?: Record<string, { type: string; literal?: unknown }> }).entries?.[key];
    if (entry?.type === "literal" && entry.literal === tag) return option;
  }
  return schema;
}

/** A schema, or a family whose messages name their dialect (read from each message). */
export type MessageSchema = v.GenericSchema | Detected;

/** What parsing a message with `S` gives. */
export type MessageOutput<S extends MessageSchema> = S extends Detected<infer Seed, infer Later>
  ? v.InferOutput<Seed> | v.InferOutput<Later>
  : S extends v.GenericSchema
    ? v.InferOutput<S>
    : never;

/** What encoding a message with `S` takes. */
export type MessageInput<S extends MessageSchema> = S extends Detected<infer Seed, infer Later>
  ? v.InferInput<Seed> | v.InferInput<Later>
  : S extends v.GenericSchema
    ? v.InferInput<S>
    : never;

/**
 * Validates `value` against `schema`, throwing a ProtocolError that names the first problem.
 * A Detected family validates against the dialect the message names (runtimeInstanceId present
 * or not), strictly: a message mixing the dialects fails, saying which dialect it was read as
 * and which field broke it.
 */
export function parseStrict<S extends MessageSchema>(schema: S, value: unknown, what: string): MessageOutput<S> {
  if (!isDetected(schema)) {
    const result = validate(schema, value);
    if (result.success) return result.output as MessageOutput<S>;
    throw new ProtocolError(`invalid ${what}: ${describeIssue(result.issues[0])}`);
  }
  const dialect = isJsonObject(value) ? dialectOf(value) : "seed";
  const result = validate(schema[dialect], value);
  if (result.success) return result.output as MessageOutput<S>;
  const issue = result.issues[0];
  throw new ProtocolError(`invalid ${what}: ${describeIssue(issue)}${dialectNote(schema, dialect, value, issue)}`);
}

/** One strict validation that stops at the first issue. */
function validate(schema: v.GenericSchema, value: unknown) {
  return v.safeParse(narrowVariant(schema, value), value, { abortEarly: true, message: issueMessage });
}

/**
 * Says how the message was read when the failure is not the instance id itself: its dialect,
 * and, when the failing field is valid in the other dialect, that the message mixes the two.
 * A seed message that is simply invalid keeps the plain message it always had.
 */
function dialectNote(family: Detected, dialect: Dialect, value: unknown, issue: v.BaseIssue<unknown>): string {
  const path = issuePath(issue);
  if (path[0] === DIALECT_KEY || !isJsonObject(value)) return "";
  const other = otherDialect(dialect);
  const read = `read as the ${dialect} dialect because ${DIALECT_SIGN[dialect]}`;
  if (acceptsWithin(family[other], asDialect(value, other), path.slice(0, -1))) {
    return ` (${read}, but this field is written the ${other} dialect's way: a message must not mix the two dialects)`;
  }
  return dialect === "later" ? ` (${read})` : "";
}

/** `value` with the instance id added or removed, so the other dialect's schema can judge the rest. */
function asDialect(value: Record<string, unknown>, dialect: Dialect): Record<string, unknown> {
  const copy = { ...value };
  if (dialect === "later") copy[DIALECT_KEY] = "x";
  else delete copy[DIALECT_KEY];
  return copy;
}

/**
 * True when `schema` raises no issue inside the object at `path` (the one holding the field that
 * failed): that object, failing field included, is written the way `schema` wants it.
 */
function acceptsWithin(schema: v.GenericSchema, value: unknown, path: readonly unknown[]): boolean {
  const result = v.safeParse(schema, value);
  if (result.success) return true;
  return !result.issues.some((issue) => {
    const at = issuePath(issue);
    return path.every((key, index) => at[index] === key);
  });
}

function issuePath(issue: v.BaseIssue<unknown>): unknown[] {
  return (issue.path ?? []).map((item) => item.key);
}

/**
 * Rejects any protocolVersion other than 1 before anything else is looked at. Every v1
 * message carries the field, so a missing one is a version error too.
 */
function checkVersion(value: unknown, what: string): void {
  if (!isJsonObject(value)) return;
  const supported = `this runtime supports only protocolVersion ${PROTOCOL_VERSION}`;
  if (!Object.hasOwn(value, "protocolVersion")) {
    throw new ProtocolError(`missing protocolVersion in ${what}: ${supported}`);
  }
  const received = value.protocolVersion;
  if (received !== PROTOCOL_VERSION) {
    const got = typeof received === "number" ? `a number other than ${PROTOCOL_VERSION}` : jsonTypeName(received);
    throw new ProtocolError(`unsupported protocolVersion (${got}) in ${what}: ${supported}`);
  }
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * JSON text → validated message: JSON syntax, then duplicate keys (JSON.parse would silently
 * keep the last), then the version, then the strict schema.
 */
export function parseMessage<S extends MessageSchema>(schema: S, text: string, what: string): MessageOutput<S> {
  let value: unknown;
  try {
    value = parseJsonText(text);
  } catch (error) {
    throw prefixed(error, `invalid ${what}: `);
  }
  if (!isJsonObject(value)) {
    throw new ProtocolError(`invalid ${what}: expected a JSON object, got ${jsonTypeName(value)}`);
  }
  if (hasDuplicateKey(text, value)) {
    const duplicate = findDuplicateKey(text);
    const where = duplicate?.path.length ? `${duplicate.path.join(".")}: ` : "";
    const key = duplicate ? ` ${shortJson(duplicate.key)}` : "";
    throw new ProtocolError(`invalid ${what}: ${where}duplicate key${key} (a JSON object must not repeat a key)`);
  }
  checkVersion(value, what);
  return parseStrict(schema, value, what);
}

/** JSON text of a key for a diagnostic, cut short when it is long. */
function shortJson(key: string): string {
  return JSON.stringify(key.length > 100 ? `${key.slice(0, 100)}…` : key);
}
