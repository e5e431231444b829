import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TcpProxy } from "../../test/support/tcp-proxy.js";
import { openStore, type Store } from "./index.js";
import { needsServer, serverUrl } from "./testing.js";

/** How a call ended, and after how long; "pending" when it had not settled after `ms`. */
async function settled(work: Promise<unknown>, ms: number) {
  const start = performance.now();
  const outcome = work.then(
    () => ({ how: "resolved" as const, ms: performance.now() - start }),
    (err: unknown) => ({ how: "rejected" as const, err, ms: performance.now() - start }),
  );
  return Promise.race([outcome, sleep(ms, { how: "pending" as const, ms }, { ref: false })]);
}

/**
 * The store reaches PostgreSQL through a proxy the test cuts silently (a partition: the
 * connection stays open and nothing crosses it), while a query it sent waits for its answer.
 */
describe("a PostgreSQL store cut off mid-query", needsServer("postgres"), () => {
  let proxy: TcpProxy;
  let store: Store;

  beforeEach(async () => {
    proxy = await TcpProxy.start(serverUrl("postgres"));
    store = await openStore(proxy.urlFor(serverUrl("postgres")), { namespace: "test-pool-cut" });
  });

  afterEach(async () => {
    await store.close();
    await proxy.close();
  });

  /** A query on the wire when the way is cut: its answer would come 200 ms later, and never does. */
  async function queryInFlight(): Promise<{ query: Promise<unknown> }> {
    const query = store.sql!.query("SELECT pg_sleep(0.2) AS slept", []);
    query.catch(() => undefined);
    await sleep(50);
    proxy.cutOff("silent");
    return { query };
  }

  it("fails the queries in flight as it closes, and the close ends within its bound", async () => {
    const { query } = await queryInFlight();
    const closing = settled(store.close(), 5_000);
    const outcome = await settled(query, 5_000);
    // The close waits a second for the answers, then fails what is still unanswered.
    expect(outcome).toMatchObject({
      how: "rejected",
      err: { message: "the store closed before PostgreSQL answered" },
    });
    expect(outcome.ms).toBeLessThan(2_500);
    const closed = await closing;
    expect(closed.how).toBe("resolved");
    expect(closed.ms).toBeLessThan(2_500);
  });

  it("fails as well a query still waiting for its connection to open (the connect timeout is 5 s)", async () => {
    const { query } = await queryInFlight();
    // The one connection is busy: this one's is opened across the cut, and never is.
    const connecting = store.sql!.query("SELECT 1 AS ok", []);
    connecting.catch(() => undefined);
    await sleep(50);
    const closing = settled(store.close(), 5_000);
    const outcome = await settled(connecting, 5_000);
    expect(outcome.how).toBe("rejected");
    expect(outcome.ms).toBeLessThan(2_500);
    expect(await settled(query, 500)).toMatchObject({ how: "rejected" });
    expect(await closing).toMatchObject({ how: "resolved" });
  });

  it("fails what is asked once the close began, at once", async () => {
    const { query } = await queryInFlight();
    const closing = store.close();
    expect(await settled(store.kv.get("session"), 500)).toMatchObject({ how: "rejected" });
    await closing;
    expect(await settled(query, 500)).toMatchObject({ how: "rejected" });
    expect(await settled(store.sql!.query("SELECT 1 AS ok", []), 500)).toMatchObject({ how: "rejected" });
  });

  it("lets a query answered in time finish as it closes", async () => {
    const query = store.sql!.query("SELECT pg_sleep(0.2) AS slept", []);
    await sleep(50);
    await store.close();
    await expect(query).resolves.toEqual([{ slept: "" }]);
  });

  it("closes at once when nothing is in flight, the way cut or not", async () => {
    await store.sql!.query("SELECT 1 AS ok", []);
    proxy.cutOff("silent");
    expect(await settled(store.close(), 1_000)).toMatchObject({ how: "resolved" });
  });
});
