import { afterEach, expect, it } from "vitest";
import { describeEachStore, type TestStores, testStores } from "./testing.js";
import { dayOf, UsageLedger } from "./usage.js";

describeEachStore("UsageLedger on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    await stores.dispose();
  });

  const call = (user: string, channel: string, inputTokens: number, cost?: number) => ({
    platform: "slack" as const,
    user,
    channel,
    key: `slack:T1:${channel}:1.000100`,
    model: "gpt-4o",
    inputTokens,
    outputTokens: 10,
    ...(cost === undefined ? {} : { cost }),
  });

  it("totals each person, channel, thread and day from every replica's records, and keeps days apart", async () => {
    stores = testStores(kind);
    const [a, b] = [new UsageLedger(await stores.open()), new UsageLedger(await stores.open())];
    const today = Date.UTC(2026, 10, 25, 12);
    const yesterday = today - 86_400_000;
    await a.record(call("U1", "C1", 100, 0.5), today);
    await b.record(call("U1", "C2", 200, 0.25), today);
    await b.record(call("U2", "C1", 300), today);
    await a.record(call("U1", "C1", 1_000, 1), yesterday);

    const day = dayOf(today);
    expect(await a.totals({ user: "U1", platform: "slack" }, day)).toEqual({
      calls: 2,
      inputTokens: 300,
      outputTokens: 20,
      cost: 0.75,
      unpriced: 0,
    });
    // Another platform's user with the same id is someone else.
    expect((await a.totals({ user: "U1", platform: "discord" }, day)).calls).toBe(0);
    expect(await b.totals({ channel: "C1", platform: "slack" }, day)).toMatchObject({
      calls: 2,
      inputTokens: 400,
      unpriced: 1,
    });
    expect((await a.totals("all", day)).calls).toBe(3);
    expect((await a.totals({ user: "U1", platform: "slack" }, dayOf(yesterday))).inputTokens).toBe(1_000);
    // A thread's total is its whole life, both days.
    expect((await a.totals({ thread: "slack:T1:C1:1.000100" })).inputTokens).toBe(1_400);
  });

  it("totals the cached part of the input apart, within the input", async () => {
    stores = testStores(kind);
    const ledger = new UsageLedger(await stores.open());
    const at = Date.UTC(2026, 10, 25, 12);
    await ledger.record({ ...call("U1", "C1", 1_000, 0.1), cachedInputTokens: 800 }, at);
    await ledger.record(call("U1", "C1", 100, 0.2), at);
    await ledger.record({ ...call("U1", "C1", 500), cachedInputTokens: 50, cacheWriteTokens: 200 }, at);
    expect(await ledger.totals({ user: "U1", platform: "slack" }, dayOf(at))).toEqual({
      calls: 3,
      inputTokens: 1_600,
      outputTokens: 30,
      cachedInputTokens: 850,
      cost: expect.closeTo(0.3, 12),
      unpriced: 1,
    });
  });

  it("leaves out an entry it cannot read instead of failing the total", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const ledger = new UsageLedger(store);
    const at = Date.UTC(2026, 10, 25, 12);
    await ledger.record(call("U1", "C1", 100), at);
    const { createState } = await import("./state.js");
    await createState(store).listAdd(`usage:user:${dayOf(at)}:slack:U1`, "{not json");
    expect((await ledger.totals({ user: "U1", platform: "slack" }, dayOf(at))).inputTokens).toBe(100);
  });
});
