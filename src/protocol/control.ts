/**
 * fd 3 frames in both dialects. Stdio, resize and signal are the same in both; the spawn
 * envelope differs by its instance id and its purposes (SPEC-later-dialect.md §5, rows 2, 5-8).
 */
import * as v from "valibot";
import { jsonMap, nonNegativeInt, protocolVersion, runtimeInstanceId, stringMap, terminalSize } from "./common.ts";
import { byDialect, detected, type OutputOf } from "./dialect.ts";
import { SignalName } from "./signal.ts";

/** A purpose that is only its kind. */
function bare<K extends string>(kind: K) {
  return v.strictObject({ kind: v.literal(kind) });
}

const sharedPurposes = [bare("git"), bare("workspace-helper"), bare("setup"), bare("archive")] as const;

/** Why the daemon runs a workload. The later dialect's purposes carry no payload, and `discovery` replaces `provider-probe`. */
export const Purpose = byDialect(
  () => v.variant("kind", [
    v.strictObject({ kind: v.literal("agent"), agentId: v.string(), provider: v.string() }),
    v.strictObject({ kind: v.literal("terminal"), terminalId: v.string() }),
    v.strictObject({ kind: v.literal("provider-probe"), provider: v.string() }),
    v.strictObject({ kind: v.literal("workspace-script"), script: v.string() }),
    ...sharedPurposes,
  ]),
  () => v.variant("kind", [bare("agent"), bare("terminal"), bare("discovery"), bare("workspace-script"), ...sharedPurposes]),
);

/** How the workload's fd 0/1/2 are wired (both dialects). */
export const Stdio = v.variant("kind", [
  v.strictObject({ kind: v.literal("pipes") }),
  v.strictObject({
    kind: v.literal("pty"),
    rows: terminalSize,
    cols: terminalSize,
    term: v.optional(v.string()),
  }),
]);

const envelopeHead = { type: v.literal("spawn"), protocolVersion };

/** The keys of an envelope after its head (and the later dialect's instance id). */
function envelopeTail<P extends v.GenericSchema>(purpose: P) {
  return {
    argv: v.pipe(v.array(v.string()), v.minLength(1)),
    cwd: v.optional(v.string()),
    env: stringMap,
    purpose,
    options: jsonMap,
    execId: v.pipe(v.string(), v.minLength(1)),
    stdio: Stdio,
  };
}

/** The first fd 3 frame of every exec; the later dialect's carries runtimeInstanceId third. */
export const SpawnEnvelope = detected(
  () => v.strictObject({ ...envelopeHead, ...envelopeTail(Purpose.seed) }),
  () => v.strictObject({ ...envelopeHead, runtimeInstanceId, ...envelopeTail(Purpose.later) }),
);

/** A PTY resize request (acknowledged by a `resized` event with the same id). */
export const ResizeControl = v.strictObject({
  type: v.literal("resize"),
  protocolVersion,
  id: nonNegativeInt,
  rows: terminalSize,
  cols: terminalSize,
});

/** A PTY signal request, by a name of the signal table. */
export const SignalControl = v.strictObject({
  type: v.literal("signal"),
  protocolVersion,
  signal: SignalName,
});

/** Any fd 3 frame. */
export const Control = detected(
  () => v.variant("type", [SpawnEnvelope.seed, ResizeControl, SignalControl]),
  () => v.variant("type", [SpawnEnvelope.later, ResizeControl, SignalControl]),
);

export type Purpose = OutputOf<typeof Purpose>;
export type Stdio = v.InferOutput<typeof Stdio>;
export type SpawnEnvelope = OutputOf<typeof SpawnEnvelope>;
export type ResizeControl = v.InferOutput<typeof ResizeControl>;
export type SignalControl = v.InferOutput<typeof SignalControl>;
export type Control = OutputOf<typeof Control>;
