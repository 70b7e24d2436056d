import * as v from "valibot";
import { protocolVersion } from "./common.ts";

/** Execution modes a runtime may offer. */
export const Mode = v.picklist(["pipes", "pty"]);

/** The `describe` answer. */
export const DescribeResponse = v.strictObject({
  protocolVersion,
  modes: v.array(Mode),
  reconcile: v.optional(v.boolean()),
});

export type Mode = v.InferOutput<typeof Mode>;
export type DescribeResponse = v.InferOutput<typeof DescribeResponse>;
