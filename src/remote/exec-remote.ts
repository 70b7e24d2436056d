import type { Invocation } from "../argv.ts";
import { serveExec } from "./serve.ts";

/**
 * `exec-remote` (internal): run by a `--remote` runtime's local `exec` over ssh. stdin/stdout
 * carry the multiplex of src/remote/mux.ts; the workload runs under an ordinary `exec` of this
 * binary, started here the way the daemon starts one (src/remote/serve.ts).
 */
export async function execRemote(invocation: Invocation): Promise<number> {
  const keepalive = Number(invocation.flags.get("keepalive-ms") ?? 0);
  return await serveExec(invocation.flags.get("workspace-id")!, Number.isInteger(keepalive) && keepalive >= 100 ? keepalive : null);
}
