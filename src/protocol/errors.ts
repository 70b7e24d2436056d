import * as v from "valibot";
import { PROTOCOL_VERSION } from "./common.ts";

/** A message or frame that breaks protocol v1. The message is meant for stderr as is. */
export class ProtocolError extends Error {
  override name = "ProtocolError";
}

/** Turns one valibot issue into `path: what was wrong`. */
function describeIssue(issue: v.BaseIssue<unknown>, what: string): string {
  const path = v.getDotPath(issue);
  if (issue.type === "strict_object" && issue.expected === "never") {
    const key = String(issue.path?.at(-1)?.key);
    const parent = issue.path && issue.path.length > 1 ? v.getDotPath({ ...issue, path: issue.path.slice(0, -1) } as v.BaseIssue<unknown>) : null;
    return `${parent ?? what}: unknown key ${JSON.stringify(key)}`;
  }
  if (issue.received === "undefined" && issue.path?.length) {
    return `${path}: required key is missing`;
  }
  return `${path ?? what}: ${issue.message}`;
}

/** Validates `value` against `schema`, throwing a ProtocolError that names the first problem. */
export function parseStrict<S extends v.GenericSchema>(schema: S, value: unknown, what: string): v.InferOutput<S> {
  const result = v.safeParse(schema, value, { abortEarly: true });
  if (result.success) return result.output;
  throw new ProtocolError(`invalid ${what}: ${describeIssue(result.issues[0], what)}`);
}

/** Rejects any protocolVersion other than 1 before anything else is looked at. */
export function checkVersion(value: unknown, what: string): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return;
  if (!Object.hasOwn(value, "protocolVersion")) return;
  const received = (value as { protocolVersion: unknown }).protocolVersion;
  if (received !== PROTOCOL_VERSION) {
    throw new ProtocolError(
      `unsupported protocolVersion ${JSON.stringify(received)} in ${what}: this runtime supports only protocolVersion ${PROTOCOL_VERSION}`,
    );
  }
}

/** JSON text → validated message: version first, then the strict schema. */
export function parseMessage<S extends v.GenericSchema>(schema: S, text: string, what: string): v.InferOutput<S> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ProtocolError(`invalid ${what}: malformed JSON (${(error as Error).message})`);
  }
  checkVersion(value, what);
  return parseStrict(schema, value, what);
}
