import type { Invocation } from "../cli.ts";
import { create } from "./create.ts";
import { describe } from "./describe.ts";
import { destroy } from "./destroy.ts";
import { inspect } from "./inspect.ts";
import { pause } from "./pause.ts";
import { reconcile } from "./reconcile.ts";
import { resume } from "./resume.ts";
import { exec } from "./exec.ts";
import { signal } from "./signal.ts";
import { execRemote } from "./exec-remote.ts";
import { receiveSource } from "./receive-source.ts";
import { OPERATOR_HANDLERS } from "./operator/index.ts";
import { loggedOperation } from "./call-log.ts";

/** An operation: returns the process exit code, or throws with a message for stderr. */
export type Handler = (invocation: Invocation) => number | Promise<number>;

/**
 * Command name → operation. Lifecycle operations log their outcome in the runtime log; exec
 * logs its own (src/ops/exec.ts); describe has no home to log to.
 */
export const HANDLERS: Record<string, Handler> = {
  describe,
  create: loggedOperation("create", create),
  inspect: loggedOperation("inspect", inspect),
  pause: loggedOperation("pause", pause),
  resume: loggedOperation("resume", resume),
  destroy: loggedOperation("destroy", destroy),
  reconcile: loggedOperation("reconcile", reconcile),
  exec,
  signal: loggedOperation("signal", signal),
  "exec-remote": execRemote,
  "receive-source": receiveSource,
  ...OPERATOR_HANDLERS,
};
