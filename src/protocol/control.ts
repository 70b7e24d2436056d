import * as v from "valibot";
import { jsonMap, nonNegativeInt, protocolVersion, stringMap, terminalSize } from "./common.ts";

/** Why the daemon runs a workload. */
export const Purpose = v.variant("kind", [
  v.strictObject({ kind: v.literal("agent"), agentId: v.string(), provider: v.string() }),
  v.strictObject({ kind: v.literal("terminal"), terminalId: v.string() }),
  v.strictObject({ kind: v.literal("git") }),
  v.strictObject({ kind: v.literal("provider-probe"), provider: v.string() }),
  v.strictObject({ kind: v.literal("workspace-helper") }),
  v.strictObject({ kind: v.literal("workspace-script"), script: v.string() }),
  v.strictObject({ kind: v.literal("setup") }),
  v.strictObject({ kind: v.literal("archive") }),
]);

/** How the workload's fd 0/1/2 are wired. */
export const Stdio = v.variant("kind", [
  v.strictObject({ kind: v.literal("pipes") }),
  v.strictObject({
    kind: v.literal("pty"),
    rows: terminalSize,
    cols: terminalSize,
    term: v.optional(v.string()),
  }),
]);

/** The first fd 3 frame of every exec. */
export const SpawnEnvelope = v.strictObject({
  type: v.literal("spawn"),
  protocolVersion,
  argv: v.pipe(v.array(v.string()), v.minLength(1)),
  cwd: v.optional(v.string()),
  env: stringMap,
  purpose: Purpose,
  options: jsonMap,
  execId: v.pipe(v.string(), v.minLength(1)),
  stdio: Stdio,
});

/** A PTY resize request (acknowledged by a `resized` event with the same id). */
export const ResizeControl = v.strictObject({
  type: v.literal("resize"),
  protocolVersion,
  id: nonNegativeInt,
  rows: terminalSize,
  cols: terminalSize,
});

/** A PTY signal request, by name. */
export const SignalControl = v.strictObject({
  type: v.literal("signal"),
  protocolVersion,
  signal: v.string(),
});

/** Any fd 3 frame. */
export const Control = v.variant("type", [SpawnEnvelope, ResizeControl, SignalControl]);

export type Purpose = v.InferOutput<typeof Purpose>;
export type Stdio = v.InferOutput<typeof Stdio>;
export type SpawnEnvelope = v.InferOutput<typeof SpawnEnvelope>;
export type ResizeControl = v.InferOutput<typeof ResizeControl>;
export type SignalControl = v.InferOutput<typeof SignalControl>;
export type Control = v.InferOutput<typeof Control>;
