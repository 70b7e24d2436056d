/**
 * What the runtime log records of one protocol call: unknown option keys (warned before
 * anything is done), the spawn envelope at debug, and the outcome as the call's last line.
 * Lines are written by src/log/runtime-log.ts; this file only decides what they say.
 */
import type { Handler, Invocation } from "../argv.ts";
import { diagnoseOnStderr } from "../output.ts";
import { readOptions, unknownOptions, type RuntimeOptions, type UnknownOption } from "../options.ts";
import { LimitError } from "../protocol/protocol-error.ts";
import type { SpawnEnvelope } from "../protocol/index.ts";
import { isShowableName } from "../protocol/common.ts";
import { attachLog, beginLog, logAttached, logLine, logOutcome, logs, secretValues, setLogExecId } from "./runtime-log.ts";

/** What a `--remote` call adds to its outcome line: ssh's own failure and the first line of why. */
let outcomeFacts: Record<string, unknown> = {};

/** Facts for this process's outcome line (a later call's keys win). */
export function addOutcomeFacts(fields: Record<string, unknown>): void {
  outcomeFacts = { ...outcomeFacts, ...fields };
}

/** `inspect` runs before every exec: its successes are kept at debug, not info. */
const QUIET_SUCCESS = new Set(["inspect"]);

/** A lifecycle operation whose outcome (status, duration, failure message) ends the log of its process. */
export function loggedOperation(op: string, handler: Handler): Handler {
  return async (invocation: Invocation) => {
    beginLog(op, { workspaceId: invocation.flags.get("workspace-id"), execId: invocation.flags.get("exec-id") });
    const signal = invocation.flags.get("signal");
    let status: number;
    try {
      status = await handler(invocation);
    } catch (error) {
      if (error instanceof LimitError && !logAttached()) attachFallbackLog();
      logOutcome("error", "op", { signal, status: 1, durationMs: elapsed(), ...outcomeFacts, message: (error as Error).message });
      throw error;
    }
    const level = status !== 0 ? "error" : QUIET_SUCCESS.has(op) ? "debug" : "info";
    logOutcome(level, "op", { signal, status, durationMs: elapsed(), ...outcomeFacts });
    return status;
  };
}

/**
 * A lifecycle call's unknown option keys, each warned about on stderr before anything is done
 * (one line per key, naming the nearest known key). Never an error: the map is open.
 */
export function warnUnknownOptions(raw: Record<string, unknown>): UnknownOption[] {
  const unknown = unknownOptions(raw);
  for (const { key, nearest } of unknown) diagnoseOnStderr(`warning: ${unknownOptionText(key, nearest)}`);
  return unknown;
}

/** The options are valid: point the log at their home and record the unknown keys there too. */
export function attachLifecycleLog(options: RuntimeOptions, unknown: readonly UnknownOption[]): void {
  attachLog(options, secretValues("lifecycleEnvironment", options.lifecycleEnvironment));
  for (const { key, nearest } of unknown) logLine("warn", "unknown-option", { key, nearest });
}

/** The message for an unknown option key. */
export function unknownOptionText(key: string, nearest: string | null): string {
  return `unknown option ${JSON.stringify(key)} is ignored${nearest ? `; did you mean ${JSON.stringify(nearest)}?` : ""}`;
}

/**
 * exec: its stderr is the workload's, so unknown keys go to the log only. At debug the spawn
 * envelope is logged without env values (their names only, when they are names) and with
 * option keys only.
 */
export function attachExecLog(invocation: Invocation, envelope: SpawnEnvelope, options: RuntimeOptions): void {
  beginLog("exec", { workspaceId: invocation.flags.get("workspace-id") });
  setLogExecId(envelope.execId);
  attachLog(options, { ...secretValues("env", envelope.env), ...secretValues("lifecycleEnvironment", options.lifecycleEnvironment) });
  for (const { key, nearest } of unknownOptions(envelope.options)) logLine("warn", "unknown-option", { key, nearest });
  if (logs("debug")) {
    logLine("debug", "spawn", {
      argv: envelope.argv,
      cwd: envelope.cwd,
      stdio: envelope.stdio,
      purpose: envelope.purpose,
      // A name that is not a variable name may be a pasted `NAME=secret`: only its place is said.
      envKeys: Object.keys(envelope.env).map((key, index) => (isShowableName(key) ? key : `(entry number ${index + 1}, not a variable name)`)),
      optionKeys: Object.keys(envelope.options),
    });
  }
}

/**
 * A message refused for its size or nesting (LimitError) before its options were read: the
 * log of the home the environment selects (PASEO_HOST_RUNTIME_HOME, else the default), so the
 * refusal leaves a trace. Such a home that does not exist is not made for it.
 */
export function attachFallbackLog(): void {
  attachLog(readOptions({}));
}

/** exec's envelope could not be read (LimitError): its refusal goes to the fallback log. */
export function attachUnreadExecLog(invocation: Invocation): void {
  beginLog("exec", { workspaceId: invocation.flags.get("workspace-id") });
  attachFallbackLog();
}

/** What the exec outcome line says about the workload (unknown when the envelope was unreadable). */
interface ExecFacts {
  mode?: string;
  purpose?: string;
}

/** The exec was refused before anything was launched. */
export function logExecRefused(facts: ExecFacts, status: number, error: unknown): void {
  logOutcome("error", "exec", { outcome: "refused", status, ...facts, durationMs: elapsed(), ...outcomeFacts, message: (error as Error).message });
}

/** The wrapper failed after launching (the workload was ended). */
export function logExecFailed(facts: ExecFacts, error: unknown): void {
  logOutcome("error", "exec", { outcome: "failed", status: 1, ...facts, durationMs: elapsed(), ...outcomeFacts, message: (error as Error).message });
}

/** The workload ended; the wrapper mirrors its code or signal next. */
export function logExecExited(facts: ExecFacts, code: number | null, signal: string | null): void {
  logOutcome("info", "exec", { outcome: "exited", ...facts, code, signal, durationMs: elapsed(), ...outcomeFacts });
}

/** Milliseconds since this process started (Bun's performance clock starts with the process). */
function elapsed(): number {
  return Math.round(performance.now() * 10) / 10;
}
