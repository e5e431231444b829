import type { Store } from "./index.js";

/**
 * How far this machine's clock may stray from the store's before replicas misjudge each
 * other: heartbeats and leases on PostgreSQL carry their expiry as this machine's time
 * (keyv's row format), and every replica reads them by its own clock. A replica whose
 * clock runs ahead by a heartbeat's life (4 s) takes the others for dead, and their
 * turns over while they still run. Half a second each keeps any two within a second of
 * each other, a quarter of that margin.
 */
export const SKEW_WARN_MS = 500;

/**
 * This machine's clock minus PostgreSQL's, in ms (positive: ahead), measured at the
 * middle of one round trip. Undefined for stores that keep time themselves (Redis
 * expires keys by its own clock) or share this machine's (SQLite).
 */
export async function clockSkewMs(store: Store, now: () => number = Date.now): Promise<number | undefined> {
  if (store.kind !== "postgres" || !store.sql) return undefined;
  const sent = now();
  const [row] = await store.sql.query(
    "SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now",
    [],
  );
  const received = now();
  return Math.round((sent + received) / 2 - Number(row?.now));
}

/** The operator's sentence for a skew past `SKEW_WARN_MS`, or undefined when the clocks agree. */
export function skewWarning(skewMs: number | undefined): string | undefined {
  if (skewMs === undefined || Math.abs(skewMs) <= SKEW_WARN_MS) return undefined;
  const seconds = (Math.abs(skewMs) / 1000).toFixed(1);
  return `This machine's clock is ${seconds} s ${skewMs > 0 ? "ahead of" : "behind"} PostgreSQL's. Replicas judge each other's heartbeats by their own clocks: keep every replica's clock synchronized (NTP), or one may take over turns that are still running.`;
}
