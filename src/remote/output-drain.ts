/**
 * Waiting for a workload's output before what must follow it (`eof`, `exit`): on both sides of
 * a remote exec, output is waited for only while it keeps moving, so a daemon or a local side
 * that stopped reading delays nothing for longer than OUTPUT_IDLE_MS.
 */

/** How long output may make no progress before it is no longer waited for. */
const OUTPUT_IDLE_MS = 250;

/** What is waited for: whether output is still under way, a promise of its end, and when it last moved. */
export interface OutputInFlight {
  pending(): boolean;
  done(): Promise<unknown>;
  lastProgress(): number;
}

/** Resolves once `output` is no longer pending, or made no progress for OUTPUT_IDLE_MS, or after `maxMs` in all. */
export async function drainWhileMoving(output: OutputInFlight, maxMs = Number.POSITIVE_INFINITY): Promise<void> {
  const since = performance.now();
  while (output.pending()) {
    const now = performance.now();
    if (now - output.lastProgress() >= OUTPUT_IDLE_MS || now - since > maxMs) return;
    await Promise.race([output.done(), Bun.sleep(OUTPUT_IDLE_MS / 5)]);
  }
}
