import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, inject } from "vitest";
import { openStore, type Store, type StoreKind } from "./index.js";

/**
 * Stores for tests: a temp sqlite file, or a unique namespace on the Redis and PostgreSQL
 * servers of the run, each removed again by `dispose`. Also used by other topics' tests.
 */
export const STORE_KINDS: StoreKind[] = ["sqlite", "redis", "postgres"];

export type ServerKind = Exclude<StoreKind, "sqlite">;

export const SERVER_NAMES: Record<ServerKind, string> = { redis: "Redis", postgres: "PostgreSQL" };
export const SERVER_URL_VARIABLES: Record<ServerKind, string> = {
  redis: "TEST_REDIS_URL",
  postgres: "TEST_POSTGRES_URL",
};

export interface TestServer {
  url: string;
  /** Why the server cannot be used in this run; the tests that need it are skipped. */
  missing?: string;
  /** Set when PostgreSQL is the embedded PGlite engine because nothing answered at the configured URL. */
  embedded?: string;
}

export type TestServers = Record<ServerKind, TestServer>;

declare module "vitest" {
  export interface ProvidedContext {
    /** Found once per run by the global setup, test/support/services.ts. */
    testServers: TestServers;
  }
}

const DEFAULT_SERVER_URLS: Record<ServerKind, string> = {
  // Its own database: every test writes under a namespace of its own there and deletes only that.
  redis: "redis://127.0.0.1:6379/9",
  postgres: "postgres://postgres@127.0.0.1:5432/test",
};

export function configuredServerUrl(kind: ServerKind): string {
  return process.env[SERVER_URL_VARIABLES[kind]] || DEFAULT_SERVER_URLS[kind];
}

/** The servers of this run; without the global setup (another config), the configured ones. */
function testServers(): TestServers {
  return (
    inject("testServers") ?? {
      redis: { url: configuredServerUrl("redis") },
      postgres: { url: configuredServerUrl("postgres") },
    }
  );
}

export function serverUrl(kind: ServerKind): string {
  return testServers()[kind].url;
}

/**
 * Options for a suite that needs the server behind `kind`: skipped when the run has none,
 * and tagged with the kind, so that the run's summary can count what was skipped.
 */
export function needsServer(kind: StoreKind): { skip: boolean; tags: ServerKind[] } {
  if (kind === "sqlite") return { skip: false, tags: [] };
  return { skip: testServers()[kind].missing !== undefined, tags: [kind] };
}

/** `describe.each(STORE_KINDS)`, each suite skipped when the server behind its kind is missing. */
export function describeEachStore(name: string, fn: (kind: StoreKind) => void): void {
  for (const kind of STORE_KINDS) describe(name.replace("%s", kind), needsServer(kind), () => fn(kind));
}

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
  const url = dir ? `sqlite://${join(dir, "store.sqlite")}` : serverUrl(kind as ServerKind);
  const opened: Store[] = [];
  let everOpened = false;
  return {
    kind,
    url,
    namespace,
    async open() {
      const store = await openStore(url, { namespace });
      everOpened = true;
      opened.push(store);
      return store;
    },
    async dispose() {
      for (const s of opened.splice(0)) await s.close().catch(() => {});
      if (dir) {
        rmSync(dir, { recursive: true, force: true });
        return;
      }
      // Never opened (its suite was skipped): nothing to delete, and maybe no server to ask.
      if (!everOpened) return;
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
    await deleteRedisKeys(store.redis, `${prefix}*`);
    return;
  }
  await store.sql?.query(`DELETE FROM ${store.sql.table} WHERE left(key, $1) = $2`, [prefix.length, prefix]);
}

/** Deletes the keys matching `pattern` (SCAN, never FLUSHDB: the database may hold others' data). */
export async function deleteRedisKeys(redis: NonNullable<Store["redis"]>, pattern: string): Promise<number> {
  const keys: string[] = [];
  for await (const batch of redis.scanIterator({ MATCH: pattern, COUNT: 500 })) keys.push(...batch);
  if (keys.length > 0) await redis.del(keys);
  return keys.length;
}
