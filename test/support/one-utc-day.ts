/**
 * Usage totals, ratings and daily budgets count per UTC day, so a test that records usage
 * and then reads "today" fails when 00:00 UTC falls between the two (CI once started at
 * 23:55). Such a test calls this first: near the end of a day it waits for the next one.
 */
export const DAY_WAIT_MS = 120_000;

export async function inOneUtcDay(spanMs = DAY_WAIT_MS): Promise<void> {
  const now = Date.now();
  const nextMidnight = Math.ceil((now + 1) / 86_400_000) * 86_400_000;
  const left = nextMidnight - now;
  if (left > spanMs) return;
  console.log(`waiting ${Math.ceil(left / 1000)} s for 00:00 UTC, so the test's usage falls in one day`);
  await new Promise((r) => setTimeout(r, left + 1_000));
}
