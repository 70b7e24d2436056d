/**
 * One lifecycle call as every lifecycle operation starts it: the request read from stdin, the
 * daemon's options checked (unknown keys warned about first), the runtime log pointed at the
 * home, and who the request speaks for.
 */
import type { LifecycleRequest } from "../protocol/lifecycle.ts";
import { readLifecycleRequest } from "../protocol/request.ts";
import { readOptions, type RuntimeOptions } from "../options.ts";
import { attachLifecycleLog, warnUnknownOptions } from "../log/call-log.ts";
import { ownershipOf, type Ownership } from "./owner.ts";

/** A lifecycle request with its options checked: nothing has been opened or changed yet. */
interface LifecycleCall {
  request: LifecycleRequest;
  options: RuntimeOptions;
  /** Who the request speaks for: owner option, dialect, instance id, configuration. */
  owner: Ownership;
}

/**
 * Reads stdin and validates the options every lifecycle operation relies on; unknown option
 * keys are warned about first, and the runtime log is pointed at the home.
 */
export function readLifecycleCall(): LifecycleCall {
  const request = readLifecycleRequest();
  const unknown = warnUnknownOptions(request.options);
  const options = readOptions(request.options);
  attachLifecycleLog(options, unknown);
  return { request, options, owner: ownershipOf(request, options.owner) };
}
