import type { Invocation } from "../argv.ts";
import { serveExec } from "./serve.ts";

/**
 * `exec-remote` (internal): run by a `--remote` runtime's local `exec` over ssh. stdin/stdout
 * carry the multiplex of src/remote/mux.ts; the workload runs under an ordinary `exec` of this
 * binary, started here the way the daemon starts one (src/remote/serve.ts).
 */
export async function execRemote(invocation: Invocation): Promise<number> {
  return await serveExec(invocation.flags.get("workspace-id")!);
}
