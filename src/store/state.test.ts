import { afterEach, expect, it } from "vitest";
import { sweepExpired } from "./index.js";
import { createState } from "./state.js";
import { describeEachStore, type TestStores, testStores } from "./testing.js";

describeEachStore("the state store on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    await stores.dispose();
  });

  const open = async () => createState(await stores.open());
  const later = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("reads back what it wrote, in another connection, until it is deleted", async () => {
    stores = testStores(kind);
    const [a, b] = [await open(), await open()];
    await a.set("k", { n: 1, list: ["x"] });
    expect(await b.get("k")).toEqual({ n: 1, list: ["x"] });
    await b.delete("k");
    expect(await a.get("k")).toBeUndefined();
  });

  it("reads back strings that begin with a colon as they were written (an emoji code opening a message)", async () => {
    stores = testStores(kind);
    const [a, b] = [await open(), await open()];
    const value = { text: ":eyes: what is this?", parts: [":+1:", "::"] };
    await a.set("colons", value);
    expect(await b.get("colons")).toEqual(value);
  });

  it("forgets a value after its expiry", async () => {
    stores = testStores(kind);
    const s = await open();
    await s.set("short", "v", 60);
    expect(await s.get("short")).toBe("v");
    await later(120);
    expect(await s.get("short")).toBeUndefined();
  });

  it("writes a key only once while it lives, and again after it expired", async () => {
    stores = testStores(kind);
    const [a, b] = [await open(), await open()];
    const first = await Promise.all([a.setIfAbsent("once", 1, 80), b.setIfAbsent("once", 2, 80)]);
    expect(first.filter(Boolean)).toHaveLength(1);
    await later(150);
    expect(await b.setIfAbsent("once", 3, 1_000)).toBe(true);
  });

  it("replaces a string only while it holds the expected one, for one of two racing writers", async () => {
    stores = testStores(kind);
    const [a, b] = [await open(), await open()];
    expect(await a.replaceIf("claim", "gone", "a", 1_000)).toBe(false);
    expect(await a.get("claim")).toBeUndefined();
    await a.set("claim", "gone", 1_000);
    const raced = await Promise.all([
      a.replaceIf("claim", "gone", "a", 1_000),
      b.replaceIf("claim", "gone", "b", 1_000),
    ]);
    expect(raced.filter(Boolean)).toHaveLength(1);
    const winner = raced[0] ? "a" : "b";
    expect(await b.get("claim")).toBe(winner);
    expect(await b.replaceIf("claim", "gone", "b", 1_000)).toBe(false);
    // The new value expires on its own clock, and an expired value is not replaced.
    expect(await b.replaceIf("claim", winner, "short", 80)).toBe(true);
    await later(150);
    expect(await b.get("claim")).toBeUndefined();
    expect(await b.replaceIf("claim", "short", "late", 1_000)).toBe(false);
    expect(await b.get("claim")).toBeUndefined();
  });

  it("gives a lock to one holder, lets only that holder extend or release it", async () => {
    stores = testStores(kind);
    const [a, b] = [await open(), await open()];
    // Leases long enough that a slow machine never sees one expire by accident, and an
    // extension that outlives the first lease by far.
    const lease = await a.acquireLock("thread", 1_000);
    expect(lease).toBeDefined();
    expect(await b.acquireLock("thread", 1_000)).toBeUndefined();
    const forged = { key: lease!.key, token: "not-the-token" };
    expect(await b.extendLock(forged, 10_000)).toBe(false);
    await b.releaseLock(forged);
    expect(await b.acquireLock("thread", 1_000)).toBeUndefined();
    expect(await a.extendLock(lease!, 10_000)).toBe(true);
    await later(1_200);
    expect(await b.acquireLock("thread", 1_000)).toBeUndefined();
    await a.releaseLock(lease!);
    expect(await b.acquireLock("thread", 1_000)).toBeDefined();
  });

  it("writes and deletes under a lease only while it is held: not once released, expired or taken", async () => {
    stores = testStores(kind);
    const [a, b] = [await open(), await open()];
    const lease = (await a.acquireLock("fenced", 300))!;
    expect(await a.holds(lease)).toBe(true);
    expect(await a.setIfHolding(lease, "record", { by: "a", n: 1 })).toBe(true);
    expect(await b.get("record")).toEqual({ by: "a", n: 1 });
    const forged = { key: lease.key, token: "not-the-token" };
    expect(await b.setIfHolding(forged, "record", { by: "b" })).toBe(false);
    expect(await b.deleteIfHolding(forged, "record")).toBe(false);
    // The lease lapses (its holder stalled) and another process takes the thread.
    await later(400);
    expect(await a.holds(lease)).toBe(false);
    expect(await a.setIfHolding(lease, "record", { by: "a", n: 2 })).toBe(false);
    const taker = (await b.acquireLock("fenced", 1_000))!;
    expect(await b.setIfHolding(taker, "record", { by: "b", n: 3 })).toBe(true);
    expect(await a.setIfHolding(lease, "record", { by: "a", n: 4 })).toBe(false);
    expect(await a.deleteIfHolding(lease, "record")).toBe(false);
    expect(await a.get("record")).toEqual({ by: "b", n: 3 });
    await b.releaseLock(taker);
    expect(await b.setIfHolding(taker, "record", { by: "b", n: 5 })).toBe(false);
    const again = (await b.acquireLock("fenced", 1_000))!;
    expect(await b.deleteIfHolding(again, "record")).toBe(true);
    expect(await a.get("record")).toBeUndefined();
  });

  it("deletes a key that is already gone under a held lease as done, and says false only once the lease is lost", async () => {
    stores = testStores(kind);
    const [a, b] = [await open(), await open()];
    const lease = (await a.acquireLock("ending", 5_000))!;
    expect(await a.deleteIfHolding(lease, "never-written")).toBe(true);
    expect(await a.setIfHolding(lease, "record", { n: 1 })).toBe(true);
    expect(await a.deleteIfHolding(lease, "record")).toBe(true);
    // A second end of the same turn (a retry after a timeout): nothing to delete, still the holder.
    expect(await b.deleteIfHolding(lease, "record")).toBe(true);
    expect(await b.holds(lease)).toBe(true);
    expect(await b.deleteIfHolding({ key: lease.key, token: "not-the-token" }, "record")).toBe(false);
    await a.releaseLock(lease);
    expect(await a.deleteIfHolding(lease, "record")).toBe(false);
    expect(await a.deleteIfHolding(lease, "never-written")).toBe(false);
  });

  it("writes a value the store's keyv reads only while the lease is held", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const [a, b] = [createState(store), await open()];
    const lease = (await a.acquireLock("kv-fenced", 60_000))!;
    expect(await a.kvSetIfHolding(lease, "session:s1", { by: "a", messages: [1, 2] })).toBe(true);
    expect(await store.kv.get("session:s1")).toEqual({ by: "a", messages: [1, 2] });
    // Taken by another process: the old holder's write changes nothing.
    await b.releaseLock(lease);
    const taker = (await b.acquireLock("kv-fenced", 60_000))!;
    await store.kv.set("session:s1", { by: "b" });
    expect(await a.kvSetIfHolding(lease, "session:s1", { by: "a", messages: [] })).toBe(false);
    expect(await b.kvSetIfHolding(taker, "session:s1", { by: "b", n: 2 })).toBe(true);
    expect(await (await stores.open()).kv.get("session:s1")).toEqual({ by: "b", n: 2 });
  });

  it("keeps a list of members that several writers add to at once", async () => {
    stores = testStores(kind);
    const [a, b] = [await open(), await open()];
    const members = Array.from({ length: 20 }, (_, i) => `slack:T1:C1:${i}.0001`);
    await Promise.all(members.map((m, i) => (i % 2 ? a : b).listAdd("pending", m)));
    await a.listAdd("pending", members[0]!);
    await a.listRemove("pending", members[1]!);
    await a.listAdd("other", "x");
    expect((await b.listMembers("pending")).sort()).toEqual(members.filter((_, i) => i !== 1).sort());
    expect(await b.listMembers("other")).toEqual(["x"]);
    expect(await b.listMembers("none")).toEqual([]);
  });

  it("takes a member off a list under a lease only while it is held", async () => {
    stores = testStores(kind);
    const [a, b] = [await open(), await open()];
    await a.listAdd("turns", "k:1");
    await a.listAdd("turns", "k:2");
    const lease = (await a.acquireLock("k", 5_000))!;
    expect(await a.listRemoveIfHolding(lease, "turns", "k:1")).toBe(true);
    expect(await a.listRemoveIfHolding(lease, "turns", "k:1")).toBe(false);
    await a.releaseLock(lease);
    await b.acquireLock("k", 5_000);
    expect(await a.listRemoveIfHolding(lease, "turns", "k:2")).toBe(false);
    expect(await b.listMembers("turns")).toEqual(["k:2"]);
  });

  it("lists members with any characters, and only its own list's", async () => {
    stores = testStores(kind);
    const state = await open();
    const odd = ["ü-€-😀", "\u{10FFFF}", "plain"];
    for (const m of odd) await state.listAdd("odd", m);
    await state.listAdd("odd2", "neighbour");
    await state.listAdd("od", "shorter");
    expect((await state.listMembers("odd")).sort()).toEqual([...odd].sort());
    if (kind !== "sqlite") return;
    // On SQLite the read is a range of the key's index, not a scan of every row.
    const store = await stores.open();
    const asked: string[] = [];
    const sql = store.sql!;
    const query = sql.query;
    sql.query = (text, params) => {
      asked.push(text);
      return query(text, params);
    };
    await createState(store).listMembers("odd");
    const plan = await query(`EXPLAIN QUERY PLAN ${asked.at(-1)}`, ["a", "b", 1, "a"]);
    expect(plan.map((r) => String(r.detail)).join("; ")).toMatch(
      /SEARCH .* USING .*INDEX .*\(key>\? AND key<\?\)/,
    );
  });

  it("lets lists added to with a lifetime go once it passes without an addition", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const state = createState(store);
    await state.listAddEach(["usage:day1", "usage:day1-alice"], "e1", 150);
    await state.listAdd("usage:thread", "e1");
    expect(await state.listMembers("usage:day1")).toEqual(["e1"]);
    await later(250);
    await sweepExpired(store);
    expect(await state.listMembers("usage:day1")).toEqual([]);
    expect(await state.listMembers("usage:day1-alice")).toEqual([]);
    // Without a lifetime, kept.
    expect(await state.listMembers("usage:thread")).toEqual(["e1"]);
  });

  it("adds one member to several lists at once, each list as if added one by one", async () => {
    stores = testStores(kind);
    const [a, b] = [await open(), await open()];
    const entry = JSON.stringify({ id: "u1", note: "quotes ' and \" and colons: kept" });
    await a.listAdd("usage:user", "earlier");
    await a.listAddEach(["usage:user", "usage:channel", "usage:all"], entry);
    await b.listAddEach(["usage:user", "usage:user"], entry);
    await b.listAddEach([], "nowhere");
    expect((await b.listMembers("usage:user")).sort()).toEqual([entry, "earlier"].sort());
    expect(await b.listMembers("usage:channel")).toEqual([entry]);
    await b.listRemove("usage:all", entry);
    expect(await a.listMembers("usage:all")).toEqual([]);
    expect(await a.listMembers("usage:channel")).toEqual([entry]);
  });
});
