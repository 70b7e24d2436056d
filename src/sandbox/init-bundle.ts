/**
 * A build-time macro (launch.ts imports it `with { type: "macro" }`): init.ts and what it
 * imports, bundled into one self-contained text, which the runtime embeds and bwrap copies
 * into the sandbox. So the init shares the runtime's code (the egress forwarder on conn.ts
 * and splice.ts) instead of keeping copies. Bun.build cannot run inside a macro (the bundler
 * waits for the macro), so this runs Bun's CLI, the same executable that is building.
 */
import { fileURLToPath } from "node:url";

export function bundledInit(): string {
  const entry = fileURLToPath(new URL("./init.ts", import.meta.url));
  const run = Bun.spawnSync([process.execPath, "build", entry, "--target=bun", "--format=esm", "--minify"], { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`bundling the sandbox init failed: ${run.stderr.toString()}`);
  return run.stdout.toString();
}
