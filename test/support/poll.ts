/** The one polling helper of the test kit. */

/** A probe's "not yet". Any other answer (0 and "" too) ends the wait. */
type NotYet = undefined | null | false;

/**
 * Polls `probe` (sync or async) until it answers something other than undefined, null or false,
 * and returns that answer; throws after `ms`, saying what never happened (`what` may be a
 * function, read then, to tell what was seen instead).
 */
export async function until<T>(what: string | (() => string), probe: () => T | NotYet | Promise<T | NotYet>, ms = 10_000): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value as T;
    if (performance.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${typeof what === "string" ? what : what()}`);
    await Bun.sleep(10);
  }
}

/** Polls `probe` until it returns [] or about `limitMs` passed; returns its last answer (the caller asserts it). */
export async function untilNone<T>(probe: () => T[], limitMs = 10_000): Promise<T[]> {
  const deadline = performance.now() + limitMs;
  let found = probe();
  while (found.length > 0 && performance.now() < deadline) {
    await Bun.sleep(25);
    found = probe();
  }
  return found;
}
