/**
 * The daemon's cleanup of an execution it can no longer trust (a protocol failure, a lost
 * session): this binary's `signal --signal SIGKILL` for its exec id, which ends the workload's
 * whole group or cgroup and waits until it is gone.
 */
import type { SpawnEnvelope } from "../protocol/index.ts";
import { selfCommand, selfEnv } from "./self.ts";

export interface CleanupOptions {
  /** How long the `signal` operation may take before it is SIGKILLed itself. */
  budgetMs: number;
  /** The argv[0] it runs with (the daemon's own, when an operator command knows it). */
  argv0?: string;
  /** The program and the words before `signal` (default: this binary; a remote runtime's `--remote …` after it). */
  command?: readonly string[];
}

/** Runs `signal … --signal SIGKILL` for the envelope's exec id; its output is not needed. */
export async function killExecution(workspaceId: string, envelope: SpawnEnvelope, { budgetMs, argv0, command }: CleanupOptions): Promise<void> {
  const [program, ...prefix] = command ?? selfCommand();
  const proc = Bun.spawn([program!, ...prefix, "signal", "--workspace-id", workspaceId, "--exec-id", envelope.execId, "--signal", "SIGKILL"], {
    ...(argv0 === undefined ? {} : { argv0 }),
    // In the envelope's own dialect: a workspace answers only requests of the dialect it was made in.
    stdin: Buffer.from(`${JSON.stringify({ protocolVersion: 1, ...("runtimeInstanceId" in envelope ? { runtimeInstanceId: envelope.runtimeInstanceId } : {}), options: envelope.options })}\n`),
    stdout: "ignore",
    stderr: "ignore",
    env: selfEnv(),
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), budgetMs);
  await proc.exited;
  clearTimeout(timer);
}
