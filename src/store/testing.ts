import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store, type StoreKind } from "./index.js";

/**
 * Stores for tests: a temp sqlite file, or a unique namespace on the local Redis and
 * PostgreSQL servers, each removed again by `dispose`. Also used by other topics' tests.
 */
export const STORE_KINDS: StoreKind[] = ["sqlite", "redis", "postgres"];

const SERVER_URLS: Record<Exclude<StoreKind, "sqlite">, string> = {
  redis: process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379",
  postgres: process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test",
};

export interface TestStores {
  kind: StoreKind;
  url: string;
  namespace: string;
  /** Opens (another) store on the same data, like a restart or a second replica. */
  open(): Promise<Store>;
  /** Closes what `open` returned and deletes the data. */
  dispose(): Promise<void>;
}

export function testStores(kind: StoreKind): TestStores {
  const namespace = `test-${randomUUID().slice(0, 8)}`;
  const dir = kind === "sqlite" ? mkdtempSync(join(tmpdir(), "switchboard-store-")) : undefined;
  const url = dir
    ? `sqlite://${join(dir, "store.sqlite")}`
    : SERVER_URLS[kind as Exclude<StoreKind, "sqlite">];
  const opened: Store[] = [];
  return {
    kind,
    url,
    namespace,
    async open() {
      const store = await openStore(url, { namespace });
      opened.push(store);
      return store;
    },
    async dispose() {
      for (const s of opened.splice(0)) await s.close().catch(() => {});
      if (dir) {
        rmSync(dir, { recursive: true, force: true });
        return;
      }
      const store = await openStore(url, { namespace });
      try {
        await deleteNamespace(store);
      } finally {
        await store.close();
      }
    },
  };
}

async function deleteNamespace(store: Store): Promise<void> {
  const prefix = `${store.namespace}:`;
  if (store.redis) {
    const keys: string[] = [];
    for await (const batch of store.redis.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 }))
      keys.push(...batch);
    if (keys.length > 0) await store.redis.del(keys);
    return;
  }
  await store.sql?.query(`DELETE FROM ${store.sql.table} WHERE left(key, $1) = $2`, [prefix.length, prefix]);
}
