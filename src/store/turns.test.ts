import { afterEach, describe, expect, it, vi } from "vitest";
import { LockLost } from "./locks.js";
import { createState, type StateStore } from "./state.js";
import { describeEachStore, type TestStores, testStores } from "./testing.js";
import { cutOffBehind, type TurnRecord, type WaitingTurn } from "./turn-record.js";
import { TurnLedger } from "./turns.js";

describeEachStore("TurnLedger on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    await stores.dispose();
  });

  it("lists the turns that have not ended, with where their reply was written", async () => {
    stores = testStores(kind);
    const ledger = new TurnLedger(await stores.open());
    const keys = ["discord:G1:1", "discord:G1:2", "discord:G1:3"];
    const records = [];
    for (const key of keys) records.push(await ledger.begin(key));
    await ledger.address(records[0]!, { messages: ["m1", "m2"], streaming: true });
    await ledger.end(records[1]!);

    const restarted = new TurnLedger(await stores.open());
    const pending = await restarted.pending();
    expect(pending.map((r) => r.key).sort()).toEqual(["discord:G1:1", "discord:G1:3"]);
    expect(pending.find((r) => r.key === "discord:G1:1")?.address).toEqual({
      messages: ["m1", "m2"],
      streaming: true,
    });
    expect(pending.find((r) => r.key === "discord:G1:3")?.address).toBeUndefined();
  });

  it("writes a guarded record only while its lease is held: a process that lost the thread changes nothing", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const [stalled, taker] = [new TurnLedger(store), new TurnLedger(await stores.open())];
    const state = createState(store);
    const key = "slack:T1:C1:1.000100";
    const lease = (await state.acquireLock(key, 200))!;
    const mine = await stalled.begin(key, {
      id: "t1",
      owner: "a",
      input: { text: "q", user: { id: "U" }, channel: "C1" },
    });
    stalled.guard(mine, lease);
    await stalled.checkpoint(mine, "first step");
    // The stalled process's lease lapses; another takes the thread and the turn.
    await new Promise((r) => setTimeout(r, 300));
    const theirs = (await taker.get(key))!;
    const taken = (await state.acquireLock(key, 5_000))!;
    taker.guard(theirs, taken);
    await taker.takeOver(theirs, "b");
    await expect(stalled.checkpoint(mine, "first step, and more")).rejects.toBeInstanceOf(LockLost);
    await expect(stalled.end(mine)).rejects.toBeInstanceOf(LockLost);
    expect(await taker.get(key)).toMatchObject({ owner: "b", shown: "first step", takeovers: 1 });
    await taker.end(theirs);
    expect(await taker.get(key)).toBeUndefined();
  });

  it("begins a record under a lease only while it is held: a late first write never replaces the new holder's record", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const [late, taker] = [new TurnLedger(store), new TurnLedger(await stores.open())];
    const state = createState(store);
    const key = "slack:T1:C1:1.000200";
    const input = { text: "q", user: { id: "U" }, channel: "C1" };
    const lease = (await state.acquireLock(key, 5_000))!;
    // Another process takes the thread (the first saw its process stop beating) and parks a turn there.
    await state.releaseLock(lease);
    const taken = (await state.acquireLock(key, 5_000))!;
    const theirs = await taker.begin(key, { id: "t2", owner: "b", input }, taken);
    await taker.park(theirs, {
      step: { assistant: { role: "assistant", content: "" }, asks: [], settled: [] },
      refs: {},
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
      user: { id: "U" },
      channel: "C1",
    });
    // The first process's record, written late under the lease it lost.
    await expect(late.begin(key, { id: "t1", owner: "a", input }, lease)).rejects.toBeInstanceOf(LockLost);
    const mine = late.open(key, { id: "t1", owner: "a", input }, lease);
    await expect(late.opened(mine)).rejects.toBeInstanceOf(LockLost);
    expect(await taker.get(key)).toMatchObject({ id: "t2", owner: "b", waiting: { channel: "C1" } });
  });

  it("an end that stalls after deleting its record never takes the new holder's turn off the pending list", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const [stalled, taker] = [new TurnLedger(store), new TurnLedger(await stores.open())];
    const state = createState(store);
    const key = "slack:T1:C1:1.000300";
    const input = { text: "q", user: { id: "U" }, channel: "C1" };
    const lease = (await state.acquireLock(key, 5_000))!;
    const mine = await stalled.begin(key, { id: "t1", owner: "a", input }, lease);
    // Its record deleted under its lease, the process stalls past it: another takes the
    // thread and begins a turn there before the stalled one goes on.
    const own = (stalled as unknown as { state: StateStore }).state;
    const deleteIfHolding = own.deleteIfHolding.bind(own);
    vi.spyOn(own, "deleteIfHolding").mockImplementationOnce(async (...args) => {
      const deleted = await deleteIfHolding(...args);
      await state.releaseLock(lease);
      const taken = (await state.acquireLock(key, 5_000))!;
      await taker.begin(key, { id: "t2", owner: "b", input }, taken);
      return deleted;
    });
    await stalled.end(mine);
    // The taker's turn is still where the takeover watch looks, should its process die.
    expect((await taker.pending()).map((r) => [r.key, r.id])).toEqual([[key, "t2"]]);
  });

  it("keeps messages handed over per thread and gives them back once, oldest sent first", async () => {
    stores = testStores(kind);
    const [a, b] = [new TurnLedger(await stores.open()), new TurnLedger(await stores.open())];
    const input = (text: string, sentAt: number) => ({ text, user: { id: "U" }, channel: "C1", sentAt });
    await a.hand("slack:T1:C1:1.1", input("second", 2_000));
    await b.hand("slack:T1:C1:1.1", input("first", 1_000));
    await b.hand("slack:T1:C2:2.2", input("elsewhere", 1_500));
    // The same text twice is two messages.
    await a.hand("slack:T1:C1:1.1", input("second", 3_000));
    expect((await b.handedThreads()).sort()).toEqual(["slack:T1:C1:1.1", "slack:T1:C2:2.2"]);
    expect((await b.takeHanded("slack:T1:C1:1.1")).map((m) => [m.text, m.sentAt])).toEqual([
      ["first", 1_000],
      ["second", 2_000],
      ["second", 3_000],
    ]);
    expect(await a.takeHanded("slack:T1:C1:1.1")).toEqual([]);
    expect(await a.handedThreads()).toEqual(["slack:T1:C2:2.2"]);
  });

  it("gives the messages queued behind a turn back to its thread when it ends, once however often", async () => {
    stores = testStores(kind);
    const ledger = new TurnLedger(await stores.open());
    const key = "slack:T1:C1:1.1";
    const input = (text: string, sentAt: number) => ({ text, user: { id: "U" }, channel: "C1", sentAt });
    // A handed message's turn, carrying the two behind it, parks on an approval and ends later.
    const record = await ledger.begin(key, {
      id: "turn-1",
      owner: "p1",
      input: input("first", 1_000),
      queued: [input("second", 2_000), input("third", 3_000)],
    });
    await ledger.handQueued(record);
    await ledger.end(record);
    expect(await ledger.get(key)).toBeUndefined();
    expect((await ledger.takeHanded(key)).map((m) => m.text)).toEqual(["second", "third"]);
    expect(await ledger.takeHanded(key)).toEqual([]);
  });

  it("counts a death against a turn's takeovers, not a hand-over or a handed message's first run", async () => {
    stores = testStores(kind);
    const ledger = new TurnLedger(await stores.open());
    const input = { text: "q", user: { id: "U" }, channel: "C1" };
    const record = await ledger.begin("slack:T1:C1:2.2", { id: "t", owner: "p1", input });
    await ledger.takeOver(record, "p2");
    expect((await ledger.get(record.key))?.takeovers).toBe(1);
    await ledger.handOver(record);
    await ledger.takeOver(record, "p3");
    const after = await ledger.get(record.key);
    expect(after).toMatchObject({ owner: "p3", takeovers: 1 });
    expect(after?.handedOver).toBeUndefined();
    await ledger.takeOver(record, "p4", false);
    expect((await ledger.get(record.key))?.takeovers).toBe(1);
  });

  it("counts no death when a process goes on with a turn it dropped itself (its store fell silent)", async () => {
    stores = testStores(kind);
    const ledger = new TurnLedger(await stores.open());
    const input = { text: "q", user: { id: "U" }, channel: "C1" };
    const record = await ledger.begin("slack:T1:C1:3.3", { id: "t", owner: "p1", input });
    await ledger.takeOver(record, "p1");
    await ledger.takeOver(record, "p1");
    expect((await ledger.get(record.key))?.takeovers).toBeUndefined();
    // Counted apart, so that a turn that stalls its own process each time is not resumed for ever.
    expect((await ledger.get(record.key))?.resumes).toBe(2);
    await ledger.takeOver(record, "p2");
    expect(await ledger.get(record.key)).toMatchObject({ takeovers: 1, resumes: 2 });
  });

  it("gives the thread's record back, still listed, to each reply cut off before a turn that carried them, as it ends", async () => {
    stores = testStores(kind);
    const ledger = new TurnLedger(await stores.open());
    const key = "slack:T1:C1:4.4";
    const input = { text: "q", user: { id: "U" }, channel: "C1" };
    const cut = (id: string) => ({
      key,
      startedAt: "2024-05-01T10:00:00.000Z",
      id,
      owner: "gone",
      address: { messages: [`m-${id}`] },
      superseded: true,
    });
    const carrier = await ledger.begin(key, { id: "t3", owner: "me", input, cutOff: [cut("t1"), cut("t2")] });
    await ledger.end(carrier);
    // Named by the process that ended the carrier: its watch ends it once the thread is idle there.
    expect(await ledger.pending()).toEqual([{ ...cut("t1"), owner: "me", cutOff: [cut("t2")] }]);
    await ledger.end((await ledger.get(key))!);
    expect(await ledger.pending()).toEqual([{ ...cut("t2"), owner: "me" }]);
    await ledger.end((await ledger.get(key))!);
    expect(await ledger.pending()).toEqual([]);
  });

  it("keeps every key when many threads begin turns at once", async () => {
    stores = testStores(kind);
    const ledger = new TurnLedger(await stores.open());
    const keys = Array.from({ length: 20 }, (_, i) => `console:local${i}`);
    const records = await Promise.all(keys.map((key) => ledger.begin(key)));
    expect((await ledger.pending()).map((r) => r.key).sort()).toEqual([...keys].sort());
    await Promise.all(records.map((record) => ledger.end(record)));
    expect(await ledger.pending()).toEqual([]);
  });

  it("does not let a later record change the one it stored", async () => {
    stores = testStores(kind);
    const ledger = new TurnLedger(await stores.open());
    const record = await ledger.begin("slack:T1:C1:1.1");
    const address = { messages: ["1.2"] };
    await ledger.address(record, address);
    address.messages.push("1.3");
    expect((await ledger.get("slack:T1:C1:1.1"))?.address).toEqual({ messages: ["1.2"] });
  });
});

describe("the replies a thread's new turn carries (cutOffBehind)", () => {
  const input = { text: "q", user: { id: "U" }, channel: "C1" };
  const earlier: TurnRecord = { key: "k", startedAt: "t0", id: "t0", superseded: true };
  const previous: TurnRecord = {
    key: "k",
    startedAt: "t1",
    id: "t1",
    owner: "gone",
    input,
    address: { messages: ["m1"] },
    shown: "Half an answer",
    queued: [input],
    recoverFailures: 2,
    cutOff: [earlier],
  };

  it("carries an unfinished turn the new message could not end, as only to be noted, after those it carried", () => {
    expect(cutOffBehind(previous, true)).toEqual([
      earlier,
      {
        key: "k",
        startedAt: "t1",
        id: "t1",
        owner: "gone",
        input,
        address: { messages: ["m1"] },
        recoverFailures: 2,
        superseded: true,
      },
    ]);
  });

  it("carries on only those the record carried when it was ended or parked, and nothing without a record", () => {
    expect(cutOffBehind(previous, false)).toEqual([earlier]);
    const parked = { ...previous, waiting: {} as WaitingTurn };
    expect(cutOffBehind(parked, true)).toEqual([earlier]);
    expect(cutOffBehind({ ...previous, cutOff: [] }, false)).toBeUndefined();
    expect(cutOffBehind(undefined, true)).toBeUndefined();
  });
});
