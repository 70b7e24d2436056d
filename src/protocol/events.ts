import * as v from "valibot";
import { nonNegativeInt, protocolVersion } from "./common.ts";
import { SignalName } from "./signal.ts";

/** Any fd 4 frame. */
export const ProcessEvent = v.variant("type", [
  v.strictObject({ type: v.literal("started"), protocolVersion }),
  v.strictObject({ type: v.literal("eof"), protocolVersion }),
  v.strictObject({ type: v.literal("resized"), protocolVersion, id: nonNegativeInt }),
  v.strictObject({
    type: v.literal("exit"),
    protocolVersion,
    code: v.nullable(v.pipe(v.number(), v.integer())),
    signal: v.nullable(SignalName),
  }),
  v.strictObject({ type: v.literal("error"), protocolVersion, message: v.string() }),
]);

export type ProcessEvent = v.InferOutput<typeof ProcessEvent>;
