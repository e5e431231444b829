const START_MS = 500;
const CAP_MS = 30_000;
/**
 * The first attempts come at most this far apart: a server started a few seconds after
 * the bot (or restarted by its operator) is joined within seconds, and only one that
 * stays down is tried less and less often.
 */
const EARLY_CAP_MS = 2_000;
const EARLY_ATTEMPTS = 10;

/** How long to wait before the next attempt after `failures` failures in a row (1 or more). */
export function retryDelay(failures: number): number {
  const cap = failures <= EARLY_ATTEMPTS ? EARLY_CAP_MS : CAP_MS;
  return Math.min(START_MS * 2 ** (failures - 1), cap);
}

/** A start-up that ran out of time is given twice as long at the next attempt, up to this many times the limit. */
const SLOW_START_GROWTH = 8;

/**
 * The start-up limit after `slow` start-ups in a row ran out of time. A fixed limit kills
 * a server slower than it (an index to load, `npx` fetching its package on a cold cache)
 * at every attempt, and it never connects.
 */
export function startDeadline(connectTimeoutMs: number, slow: number): number {
  return connectTimeoutMs * Math.min(2 ** slow, SLOW_START_GROWTH);
}
