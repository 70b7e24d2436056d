/**
 * What the daemon writes on fd 3, as the tests and the bench write it: the spawn envelope of
 * either dialect, with fresh exec ids, and the control frames after it. Pure data; the tests'
 * own client that sends it is test/support/daemon.ts, the bench's is bench/driver.ts.
 */

/** The PATH the tests' workloads get: the system's directories, nothing of the caller's. */
export const PATH = "/usr/local/bin:/usr/bin:/bin";

let counter = 0;

/** A fresh 32-hex exec id, like the daemon's. */
export function newExecId(): string {
  counter++;
  return (Date.now().toString(16) + process.pid.toString(16) + counter.toString(16)).padStart(32, "0").slice(-32);
}

/**
 * The later daemon's runtimeInstanceId: the hex SHA-256 of its absolute home path, the same for
 * every runtime of that daemon (SPEC-later-dialect §2).
 */
export function instanceIdOf(daemonHome: string): string {
  return new Bun.CryptoHasher("sha256").update(daemonHome).digest("hex");
}

/** The instance id the later-dialect tests speak as, unless they say otherwise. */
export const INSTANCE_ID = instanceIdOf("/home/paseo/.paseo");

/** A spawn envelope with the daemon's defaults. */
export function envelope(argv: string[], fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "spawn",
    protocolVersion: 1,
    argv,
    env: {},
    purpose: { kind: "workspace-script", script: "test" },
    options: {},
    execId: newExecId(),
    stdio: { kind: "pipes" },
    ...fields,
  };
}

/**
 * A spawn envelope as the later daemon sends it: runtimeInstanceId third, purposes without
 * payload. `fields` may override any key (runtimeInstanceId too) and keeps the canonical order.
 */
export function laterEnvelope(argv: string[], fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "spawn",
    protocolVersion: 1,
    runtimeInstanceId: INSTANCE_ID,
    argv,
    env: {},
    purpose: { kind: "workspace-script" },
    options: {},
    execId: newExecId(),
    stdio: { kind: "pipes" },
    ...fields,
  };
}

/** A control frame line (fd 3, after the envelope). */
export function frame(value: Record<string, unknown>): string {
  return `${JSON.stringify({ protocolVersion: 1, ...value })}\n`;
}

export const resizeFrame = (id: number, rows: number, cols: number) => frame({ type: "resize", id, rows, cols });
export const signalFrame = (signal: string) => frame({ type: "signal", signal });
