/** The spawn envelope `run` sends: what its flags describe, in the seed dialect, as the daemon would build it. */
import type { Invocation } from "../argv.ts";
import type { SeedOf, SpawnEnvelope, Stdio } from "../protocol/index.ts";
import { operatorOptions, withRecordedIsolation } from "./common.ts";
import { selection } from "./selection.ts";
import type { RecordFacts } from "./workspace-facts.ts";
import { PURPOSES } from "./purposes.ts";
import { terminalSize } from "./raw-terminal.ts";

/** A fresh execution identity, shaped like the daemon's: 32 lowercase hex characters. */
export function newExecId(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/** The workload environment: empty unless `--inherit-env`, then every `--env K=V` over it. */
function workloadEnv(invocation: Invocation): Record<string, string> | string {
  const env: Record<string, string> = {};
  if (invocation.switches.has("inherit-env")) {
    for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  }
  for (const entry of invocation.lists.get("env") ?? []) {
    const eq = entry.indexOf("=");
    if (eq <= 0) return `--env needs NAME=VALUE, got ${JSON.stringify(entry)}`;
    env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
}

/** The spawn envelope the flags describe, or a usage message. */
export function buildEnvelope(invocation: Invocation, pty: boolean, record: RecordFacts | null): SeedOf<typeof SpawnEnvelope> | string {
  const env = workloadEnv(invocation);
  if (typeof env === "string") return env;
  const kind = invocation.flags.get("purpose") ?? (pty ? "terminal" : "workspace-script");
  const purpose = PURPOSES[kind];
  if (!purpose) return `--purpose must be one of ${Object.keys(PURPOSES).join(", ")}; got ${JSON.stringify(kind)}`;
  let stdio: Stdio = { kind: "pipes" };
  if (pty) {
    stdio = { kind: "pty", ...terminalSize() };
    if (process.env.TERM) stdio.term = process.env.TERM;
  }
  const cwd = invocation.flags.get("cwd");
  const options = withRecordedIsolation(operatorOptions(invocation), record);
  const helperPath = invocation.flags.get("helper-path");
  // A remote runtime's helper is on its hosts: options.remote.helperPath (remote/context.ts).
  if (helperPath !== undefined && selection(invocation).remote !== null) options.remote = { ...(options.remote as object | undefined), helperPath };
  else if (helperPath !== undefined) options.helperPath = helperPath;
  return {
    type: "spawn",
    protocolVersion: 1,
    argv: invocation.rest,
    ...(cwd === undefined ? {} : { cwd }),
    env,
    purpose: purpose(),
    options,
    execId: newExecId(),
    stdio,
  };
}
