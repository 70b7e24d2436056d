/** Summaries of repeated measurements. */

export interface Summary {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of already sorted values (p in 0..100). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** min, p50, p90, p99, max and mean of `values`. */
export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, x) => sum + x, 0) / (sorted.length || 1);
  return {
    n: sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
    mean,
  };
}

/**
 * `measured` and `baseline` taken in turns, `warmup + trials` rounds, the order flipped every
 * round so neither always runs on a warmer machine; the warmup rounds are dropped. Each answers
 * one sample (a duration, or several figures of one run), directly or as a promise.
 */
export async function alternated<T>(rounds: { warmup: number; trials: number }, measured: () => T | Promise<T>, baseline: () => T | Promise<T>): Promise<{ measured: T[]; baseline: T[] }> {
  const out = { measured: [] as T[], baseline: [] as T[] };
  for (let i = 0; i < rounds.warmup + rounds.trials; i++) {
    let m: T;
    let b: T;
    if (i % 2 === 0) [m, b] = [await measured(), await baseline()];
    else [b, m] = [await baseline(), await measured()];
    if (i < rounds.warmup) continue;
    out.measured.push(m);
    out.baseline.push(b);
  }
  return out;
}

/** The median of `values`. */
export function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50);
}

/** Deterministic PRNG (mulberry32) so chunkings and jitter are the same on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
