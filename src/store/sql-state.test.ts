import { afterEach, describe, expect, it } from "vitest";
import type { Store } from "./index.js";
import { createState } from "./state.js";
import { needsServer, type TestStores, testStores } from "./testing.js";

const later = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `write` (another process's) once, right after `store`'s first read of `key`'s row,
 * whichever way that read goes (keyv's adapter or a statement of its own): the moment
 * between reading a row as expired and anything done about it.
 */
function landAfterRead(store: Store, key: string, write: () => Promise<unknown>): () => boolean {
  const raw = `${store.namespace}:${key}`;
  let landed = false;
  const after = async <R>(read: Promise<R>): Promise<R> => {
    const result = await read;
    if (!landed) {
      landed = true;
      await write();
    }
    return result;
  };
  const adapter = store.kv.store as { get(k: string): Promise<unknown> };
  const get = adapter.get.bind(adapter);
  adapter.get = (k) => (k === raw ? after(get(k)) : get(k));
  const sql = store.sql!;
  const query = sql.query;
  sql.query = (text, params) =>
    /^\s*SELECT/i.test(text) && params.includes(raw) ? after(query(text, params)) : query(text, params);
  return () => landed;
}

// Redis expires keys itself; only SQL reads rows that have expired but are still there.
for (const kind of ["sqlite", "postgres"] as const) {
  describe(`reading an expired row on ${kind}`, needsServer(kind), () => {
    let stores: TestStores;
    afterEach(async () => {
      await stores.dispose();
    });

    it("keeps a heartbeat that another replica wrote between the read of its expired one and what follows", async () => {
      stores = testStores(kind);
      const reader = await stores.open();
      const replica = createState(await stores.open());
      await replica.set("alive:X", "beat-1", 50);
      await later(100);
      const landed = landAfterRead(reader, "alive:X", () => replica.set("alive:X", "beat-2", 60_000));
      expect(await createState(reader).get("alive:X")).toBeUndefined();
      expect(landed()).toBe(true);
      // X is alive: its fresh beat is there for every replica that looks next.
      expect(await replica.get("alive:X")).toBe("beat-2");
      expect(await createState(reader).get("alive:X")).toBe("beat-2");
    });

    it("keeps a lease taken between another process's read of the expired one and what follows", async () => {
      stores = testStores(kind);
      const reader = await stores.open();
      const [a, b] = [createState(await stores.open()), createState(await stores.open())];
      const stale = (await a.acquireLock("thread", 50))!;
      await later(100);
      let taken: Awaited<ReturnType<typeof b.acquireLock>>;
      const landed = landAfterRead(reader, stale.key, async () => {
        taken = await b.acquireLock("thread", 60_000);
      });
      expect(await createState(reader).holds(stale)).toBe(false);
      expect(landed()).toBe(true);
      expect(taken).toBeDefined();
      expect(await b.holds(taken!)).toBe(true);
      // Still taken: nobody else gets the thread while b holds it.
      expect(await a.acquireLock("thread", 60_000)).toBeUndefined();
    });
  });
}
