import { openStore } from "../../src/store/index.js";
import { deleteRedisKeys } from "../../src/store/testing.js";

/**
 * A Redis database of a replica suite's own, `offset` places after the tests' one: the bot
 * writes under its default namespace, so suites that may run at once never share one.
 * Taken: 0 replicas.test.ts, 1 takeover.test.ts, 3 replicas-slack.test.ts,
 * 4 discord-stopping-replica.test.ts, 5 discord-replica-kill.test.ts, 6 stop-store-cut.test.ts.
 */
export function redisDatabase(url: string, offset: number): string {
  const u = new URL(url);
  u.pathname = `/${Number(u.pathname.slice(1) || "0") + offset}`;
  return u.toString();
}

/** Deletes the app's keys (its namespace) in `url`'s database, never the database's other keys. */
export async function deleteAppKeys(url: string): Promise<void> {
  const store = await openStore(url);
  try {
    await deleteRedisKeys(store.redis!, `${store.namespace}:*`);
  } finally {
    await store.close();
  }
}
