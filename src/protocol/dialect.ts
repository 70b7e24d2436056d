/**
 * The two dialects of protocol v1. Both say `protocolVersion: 1` and validate strictly, so each
 * rejects the other's bytes:
 * - `seed`: SPEC.md (AubreyF/paseo 6ca27a9b), the daemon this runtime was first written for;
 * - `later`: SPEC-later-dialect.md (getpaseo/paseo 5f2747b0): every lifecycle request and spawn
 *   envelope carries `runtimeInstanceId`.
 * A message is judged by the dialect its own bytes name (§6 of the later spec): the presence of
 * `runtimeInstanceId` is decisive, per message.
 */
import type * as v from "valibot";

export type Dialect = "seed" | "later";

/** The key whose presence makes a message the later dialect's. */
export const DIALECT_KEY = "runtimeInstanceId";

/** What each dialect's messages are recognised by, for diagnostics. */
export const DIALECT_SIGN: Record<Dialect, string> = {
  seed: "it has no runtimeInstanceId",
  later: "it has runtimeInstanceId",
};

/** One message family written once per dialect (from shared pieces); the caller picks by dialect. */
interface ByDialect<Seed extends v.GenericSchema = v.GenericSchema, Later extends v.GenericSchema = v.GenericSchema> {
  readonly seed: Seed;
  readonly later: Later;
}

/** A family whose messages name their own dialect: parsing reads it from each message. */
export interface Detected<Seed extends v.GenericSchema = v.GenericSchema, Later extends v.GenericSchema = v.GenericSchema> extends ByDialect<Seed, Later> {
  readonly detected: true;
}

/**
 * The schemas of one family, picked by dialect. Each dialect's schema is built the first time it
 * is asked for: a process speaks one dialect, and building every schema of the protocol at
 * start-up cost each call 1–3 ms (bench/README.md, "Start-up").
 */
export function byDialect<Seed extends v.GenericSchema, Later extends v.GenericSchema>(seed: () => Seed, later: () => Later): ByDialect<Seed, Later> {
  const built: { seed?: Seed; later?: Later } = {};
  return {
    get seed() {
      return (built.seed ??= seed());
    },
    get later() {
      return (built.later ??= later());
    },
  };
}

/** A family parsed by detection: `runtimeInstanceId` present ⇒ later, else seed. */
export function detected<Seed extends v.GenericSchema, Later extends v.GenericSchema>(seed: () => Seed, later: () => Later): Detected<Seed, Later> {
  return Object.assign(byDialect(seed, later), { detected: true as const });
}

/** True for a Detected family (as opposed to one plain schema). */
export function isDetected(schema: v.GenericSchema | Detected): schema is Detected {
  return (schema as Detected).detected === true;
}

/** The dialect a (parsed JSON) message is in. */
export function dialectOf(message: object): Dialect {
  return Object.hasOwn(message, DIALECT_KEY) ? "later" : "seed";
}

/** The other dialect. */
export function otherDialect(dialect: Dialect): Dialect {
  return dialect === "seed" ? "later" : "seed";
}

/** Output type of a family in the seed dialect. */
export type SeedOf<F extends ByDialect> = v.InferOutput<F["seed"]>;
/** Output type of a family in either dialect. */
export type OutputOf<F extends ByDialect> = v.InferOutput<F["seed"]> | v.InferOutput<F["later"]>;
