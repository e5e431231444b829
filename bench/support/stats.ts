/** Nearest-rank percentile (p in 0..100) of `xs`; NaN when empty. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] as number;
}

export const p50 = (xs: number[]) => percentile(xs, 50);
export const p90 = (xs: number[]) => percentile(xs, 90);
export const max = (xs: number[]) => (xs.length ? Math.max(...xs) : Number.NaN);
export const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
export const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
