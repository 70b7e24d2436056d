/**
 * "Did you mean …?": the known word nearest a mistyped one. One home for the rule, used for
 * unknown options (options.ts) and unknown commands (argv.ts).
 */

/** The candidate closest to `word` (case-insensitive edit distance ≤ a third of its length, at least 2), or null. */
export function nearestWord(word: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const known of candidates) {
    // The distance is at least the difference in length: skip the quadratic work (every
    // lifecycle call, inspect included, looks up each unknown key).
    if (Math.abs(word.length - known.length) >= bestDistance) continue;
    const distance = editDistance(word.toLowerCase(), known.toLowerCase());
    if (distance < bestDistance) {
      best = known;
      bestDistance = distance;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
