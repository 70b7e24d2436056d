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

/** An operation: returns the process exit code, or throws with a message for stderr. */
export type Handler = (invocation: Invocation) => number | Promise<number>;

/** Command name → operation. */
export const HANDLERS: Record<string, Handler> = {
  describe,
  create,
  inspect,
  pause,
  resume,
  destroy,
  reconcile,
  exec,
  signal,
  "exec-remote": execRemote,
  "receive-source": receiveSource,
  ...OPERATOR_HANDLERS,
};
