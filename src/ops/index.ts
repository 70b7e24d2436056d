import type { Invocation } from "../cli.ts";
import { describe } from "./describe.ts";
import { notImplemented } from "./pending.ts";

/** An operation: returns the process exit code, or throws with a message for stderr. */
export type Handler = (invocation: Invocation) => number | Promise<number>;

/** Command name → operation. */
export const HANDLERS: Record<string, Handler> = {
  describe,
  create: notImplemented,
  inspect: notImplemented,
  pause: notImplemented,
  resume: notImplemented,
  destroy: notImplemented,
  reconcile: notImplemented,
  signal: notImplemented,
};
