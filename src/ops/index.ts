import type { Invocation } from "../cli.ts";

/** An operation: returns the process exit code, or throws with a message for stderr. */
export type Handler = (invocation: Invocation) => number | Promise<number>;

/**
 * Loads one operation's module. The release binary is built with `--splitting`, so a process
 * evaluates only the modules of the operation it runs: node built-ins (`node:fs` alone is ~2 ms
 * at start-up), SQLite, the valibot schemas of the other operations are never loaded by
 * `describe` or `inspect` (bench/README.md, "Start-up").
 */
export type HandlerLoader = () => Promise<Handler>;

/** Lifecycle operations log their outcome in the runtime log (src/ops/call-log.ts). */
function logged(op: string, load: () => Promise<Handler>): HandlerLoader {
  return async () => {
    const [{ loggedOperation }, handler] = await Promise.all([import("../log/call-log.ts"), load()]);
    return loggedOperation(op, handler);
  };
}

/**
 * Command name → operation loader. Exec logs its own outcome (src/ops/exec.ts); describe has no
 * home to log to. Operator commands are in src/ops/operator/index.ts, loaded only for them.
 */
export const HANDLERS: Record<string, HandlerLoader> = {
  describe: async () => (await import("./describe.ts")).describe,
  create: logged("create", async () => (await import("./create.ts")).create),
  inspect: logged("inspect", async () => (await import("./inspect.ts")).inspect),
  pause: logged("pause", async () => (await import("./pause.ts")).pause),
  resume: logged("resume", async () => (await import("./resume.ts")).resume),
  destroy: logged("destroy", async () => (await import("./destroy.ts")).destroy),
  reconcile: logged("reconcile", async () => (await import("./reconcile.ts")).reconcile),
  exec: async () => (await import("./exec.ts")).exec,
  signal: logged("signal", async () => (await import("./signal.ts")).signal),
  "exec-remote": async () => (await import("../remote/exec-remote.ts")).execRemote,
  "receive-source": async () => (await import("../remote/receive-source.ts")).receiveSource,
};
