/** Levenshtein distance, for "did you mean" suggestions (short words only: O(a·b)). */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * The candidate `word` most likely misspells: the same but for case, else the nearest
 * within one edit (words up to four letters) or two (longer ones). Undefined when none is
 * that close, so a word merely unknown is not mistaken for a typo.
 */
export function closestTo(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  const sameButCase = candidates.find((c) => c.toLowerCase() === lower);
  if (sameButCase !== undefined) return sameButCase;
  const limit = word.length <= 4 ? 1 : 2;
  let best: { candidate: string; d: number } | undefined;
  for (const candidate of candidates) {
    const d = distance(lower, candidate.toLowerCase());
    if (d <= limit && (!best || d < best.d)) best = { candidate, d };
  }
  return best?.candidate;
}
