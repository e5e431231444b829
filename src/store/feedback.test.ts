import { afterEach, expect, it, vi } from "vitest";
import { FeedbackBook } from "./feedback.js";
import { sweepExpired } from "./index.js";
import { describeEachStore, type TestStores, testStores } from "./testing.js";
import { DAY_LISTS_KEPT_MS, dayOf } from "./usage.js";

describeEachStore("FeedbackBook on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    vi.restoreAllMocks();
    await stores.dispose();
  });

  it("lets a day's list of votes go once its week of reports is over, as usage's day lists go", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const book = new FeedbackBook(store);
    const at = Date.now();
    await book.vote("answer-1", "U1", "good", at);
    await book.vote("answer-1", "U2", "bad", at);
    expect(await book.tally(dayOf(at))).toEqual({ good: 1, bad: 1, answers: 1 });
    const list = `${store.namespace}:feedback:day:${dayOf(at)}`;
    if (store.redis) {
      const ttl = await store.redis.pTTL(list);
      expect(ttl).toBeGreaterThan(DAY_LISTS_KEPT_MS - 60_000);
      expect(ttl).toBeLessThanOrEqual(DAY_LISTS_KEPT_MS);
      return;
    }
    // The SQL stores drop a member's row at the sweep after its lifetime.
    vi.spyOn(Date, "now").mockReturnValue(at + DAY_LISTS_KEPT_MS + 1_000);
    await sweepExpired(store);
    expect(await book.tally(dayOf(at))).toEqual({ good: 0, bad: 0, answers: 0 });
  });
});
