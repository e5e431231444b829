/**
 * Polls until `predicate` returns a truthy value and resolves with it; rejects after the
 * timeout, counted on the monotonic clock so that a test may move `Date.now` on.
 */
export async function waitFor<T>(
  predicate: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  opts: { timeoutMs?: number; intervalMs?: number; message?: string } = {},
): Promise<T> {
  const deadline = performance.now() + (opts.timeoutMs ?? 10_000);
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (performance.now() > deadline)
      throw new Error(`waitFor timed out${opts.message ? `: ${opts.message}` : ""}`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 10));
  }
}
