import type { Invocation } from "../cli.ts";
import { readLifecycleRequest } from "./request.ts";

/** A lifecycle operation this build does not carry yet: validates its input, then fails honestly. */
export function notImplemented(invocation: Invocation): number {
  readLifecycleRequest();
  throw new Error(`${invocation.command} is not implemented yet in this build`);
}
