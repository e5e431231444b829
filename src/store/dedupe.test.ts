import { afterEach, describe, expect, it } from "vitest";
import { createDedupe, MemoryDedupe } from "./dedupe.js";
import { describeEachStore, type TestStores, testStores } from "./testing.js";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("MemoryDedupe", () => {
  it("says false the second time it sees an id", async () => {
    const d = new MemoryDedupe();
    expect(await d.firstSight("Ev1")).toBe(true);
    expect(await d.firstSight("Ev1")).toBe(false);
    expect(await d.firstSight("Ev2")).toBe(true);
  });

  it("sees an id afresh after its expiry", async () => {
    const d = new MemoryDedupe();
    expect(await d.firstSight("Ev1", 30)).toBe(true);
    await wait(60);
    expect(await d.firstSight("Ev1", 30)).toBe(true);
  });

  it("keeps at most its limit of ids, forgetting the oldest first", async () => {
    const d = new MemoryDedupe(3);
    for (const id of ["a", "b", "c", "d"]) await d.firstSight(id);
    expect(d.has("a")).toBe(false);
    expect(["b", "c", "d"].map((id) => d.has(id))).toEqual([true, true, true]);
  });
});

describeEachStore("store dedupe on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    await stores.dispose();
  });

  it("says false the second time it sees an id", async () => {
    stores = testStores(kind);
    const d = createDedupe(await stores.open());
    expect(await d.firstSight("Ev1")).toBe(true);
    expect(await d.firstSight("Ev1")).toBe(false);
    expect(await d.firstSight("Ev2")).toBe(true);
  });

  it("lets exactly one of ten simultaneous deliveries of an event through", async () => {
    stores = testStores(kind);
    const d = createDedupe(await stores.open());
    const results = await Promise.all(Array.from({ length: 10 }, () => d.firstSight("Ev-race")));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it("sees an id afresh after its expiry", async () => {
    stores = testStores(kind);
    const d = createDedupe(await stores.open());
    // Long enough that a busy machine's two round trips to a server fit inside it.
    expect(await d.firstSight("Ev1", 1_000)).toBe(true);
    expect(await d.firstSight("Ev1", 1_000)).toBe(false);
    await wait(1_200);
    expect(await d.firstSight("Ev1", 1_000)).toBe(true);
  });

  it("remembers ids across a restart", async () => {
    stores = testStores(kind);
    const first = await stores.open();
    expect(await createDedupe(first).firstSight("Ev-restart")).toBe(true);
    await first.close();
    const after = createDedupe(await stores.open());
    expect(await after.firstSight("Ev-restart")).toBe(false);
    expect(await after.firstSight("Ev-new")).toBe(true);
  });

  it("tells whether another replica took an id, without taking it", async () => {
    stores = testStores(kind);
    const [a, b] = [createDedupe(await stores.open()), createDedupe(await stores.open())];
    expect(await b.seen("C1:1.0001")).toBe(false);
    // Asking took nothing: the first sight is still there to have.
    expect(await a.firstSight("C1:1.0001")).toBe(true);
    expect(await b.seen("C1:1.0001")).toBe(true);
    expect(await a.seen("C1:1.0001")).toBe(true);
    expect(await b.firstSight("C1:1.0001")).toBe(false);
  });

  it("gives each event to exactly one of two replicas", async () => {
    stores = testStores(kind);
    const replicas = [createDedupe(await stores.open()), createDedupe(await stores.open())];
    const ids = Array.from({ length: 30 }, (_, i) => `Ev-${i}`);
    const taken = await Promise.all(
      ids.flatMap((id) =>
        replicas.map(async (d, r) => ((await d.firstSight(id)) ? `${id}@${r}` : undefined)),
      ),
    );
    const winners = taken.filter((t): t is string => t !== undefined).map((t) => t.split("@")[0]);
    expect(winners.sort()).toEqual([...ids].sort());
  });
});
