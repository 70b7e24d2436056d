/**
 * The JSON this runtime sends to its own remote side (not part of the Paseo protocol): the
 * header of `receive-source`, its answer, and the JSON payloads of mux frames. Strict schemas,
 * types derived from them, like src/protocol/.
 */
import * as v from "valibot";
import { relativePathProblem } from "../workspace/paths.ts";
import { OBJECT_ID } from "../workspace/repo.ts";
import { ProtocolError, jsonMap, parseJsonText, parseStrict, prefixed, utf8OrNull } from "../protocol/index.ts";

/** https/ssh/git URLs or scp-like `user@host:path`, with no password or token in them. */
export function isShareableUrl(url: string): boolean {
  if (/\s/.test(url) || url.startsWith("-")) return false;
  const scheme = /^(https?|ssh|git):\/\/([^/@]*@)?[A-Za-z0-9.[\]:-]+(\/|$)/i.exec(url);
  if (scheme) return scheme[2] === undefined || !scheme[2].includes(":");
  return /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]/.test(url);
}

const relative = v.pipe(
  v.string(),
  v.check((path) => relativePathProblem(path, "prefix") === null, "must be a relative path inside the repository"),
);

/** What `receive-source` reads before the bundle. */
export const ReceiveHeader = v.strictObject({
  protocolVersion: v.literal(1),
  options: jsonMap,
  /** The daemon-side repository: what HEAD is, and the remotes worth keeping (no credentials). */
  repository: v.nullable(
    v.strictObject({
      branch: v.pipe(
        v.string(),
        v.check((name) => name === "" || (!name.startsWith("-") && !/[\s\0]/.test(name)), "must be a branch name"),
      ),
      commit: v.pipe(v.string(), v.regex(OBJECT_ID, "must be a commit id")),
      prefix: relative,
      remotes: v.array(
        v.strictObject({
          name: v.pipe(v.string(), v.regex(/^[A-Za-z0-9._-]+$/, "must be a plain remote name")),
          url: v.pipe(v.string(), v.check(isShareableUrl, "must be a network URL without credentials")),
        }),
      ),
    }),
  ),
  /** paseo.json to seed from (base64), or null content when the local directory has none. */
  seed: v.nullable(v.strictObject({ content: v.nullable(v.pipe(v.string(), v.regex(/^[A-Za-z0-9+/]*={0,2}$/, "must be base64"))) })),
});

/** What `receive-source` answers: where the mirror and the seed directory are. */
export const Received = v.strictObject({
  mirror: v.nullable(v.string()),
  seed: v.nullable(v.string()),
});

/** The remote wrapper's own end (mux EXIT): how `exec` on the remote host exited. */
export const WrapperExit = v.strictObject({
  code: v.nullable(v.pipe(v.number(), v.integer())),
  signal: v.nullable(v.string()),
});

/** The remote side's greeting (mux HELLO): its mux version and program version. */
export const Hello = v.strictObject({
  mux: v.literal(1),
  version: v.string(),
});

export type ReceiveHeader = v.InferOutput<typeof ReceiveHeader>;
export type Received = v.InferOutput<typeof Received>;
export type WrapperExit = v.InferOutput<typeof WrapperExit>;
export type Hello = v.InferOutput<typeof Hello>;

/** Parses one of these JSON texts (they carry no protocolVersion of the Paseo protocol). */
export function parseWire<S extends v.GenericSchema>(schema: S, text: string | Uint8Array, what: string): v.InferOutput<S> {
  const decoded = typeof text === "string" ? text : utf8OrNull(text);
  if (decoded === null) throw new ProtocolError(`${what} is not valid UTF-8`);
  let value: unknown;
  try {
    value = parseJsonText(decoded);
  } catch (error) {
    throw prefixed(error, `${what} is not valid JSON: `);
  }
  return parseStrict(schema, value, what);
}
