/** The test kit's one runner of a lifecycle operation, the way the daemon runs it. */
import { runBinary, type RunResult } from "../../kit/binary.ts";

/** A lifecycle result with the parsed stdout (null when stdout was empty). */
export interface OpResult extends RunResult {
  json: any;
}

/**
 * Runs `[...prefix] name [--workspace-id W]` with one request line on stdin (protocolVersion
 * first, then `body`), as the daemon does; `prefix` carries `--remote …` for remote runs.
 */
export async function op(name: string, workspaceId: string | null, body: Record<string, unknown>, env: Record<string, string> = {}, prefix: readonly string[] = []): Promise<OpResult> {
  const args = workspaceId === null ? [name] : [name, "--workspace-id", workspaceId];
  const result = await runBinary([...prefix, ...args], { stdin: `${JSON.stringify({ protocolVersion: 1, ...body })}\n`, env });
  return { ...result, json: result.stdout === "" ? null : JSON.parse(result.stdout) };
}
