import { afterEach, expect, it, vi } from "vitest";
import { StoreDedupe } from "./dedupe.js";
import { ClaimLost } from "./locks.js";
import { createState, type StateStore } from "./state.js";
import { describeEachStore, type TestStores, testStores } from "./testing.js";
import { TurnLedger } from "./turns.js";
import { type Kept, WaitingMessages } from "./waiting-messages.js";

const KEY = "slack:T1:C1:1.000100";
const OTHER = "slack:T1:C2:1.000200";
const input = (text: string, sentAt: number) => ({ text, user: { id: "U1" }, channel: "C1", sentAt });
let n = 0;
const kept = (key: string, owner: string): Kept => ({ key, owner, id: `m${++n}` });

describeEachStore("WaitingMessages on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    await stores.dispose();
  });

  it("holds its message's claims as it lists it, or lists nothing for a message another process took over", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const waiting = new WaitingMessages(store, new TurnLedger(store));
    const [a, b] = [new StoreDedupe(store, "a"), new StoreDedupe(store, "b")];
    const state = createState(store);
    expect(await a.firstSight("Ev-wait")).toBe(true);
    await waiting.keep(kept(KEY, "a"), input("waits", 1), a.holding(["Ev-wait"]));
    expect(await state.get("dedupe:Ev-wait")).toBe("held:a");
    expect((await waiting.orphans(KEY, async () => false)).map((o) => o.input.text)).toEqual(["waits"]);
    // Taken over by another process while this one stalled: refused, and nothing kept.
    expect(await a.firstSight("Ev-taken")).toBe(true);
    expect(await b.redelivered("Ev-taken", async () => false, false)).toBe(true);
    const lost = kept(OTHER, "a");
    await expect(waiting.keep(lost, input("taken", 2), a.holding(["Ev-taken"]))).rejects.toBeInstanceOf(
      ClaimLost,
    );
    expect(await waiting.orphans(OTHER, async () => false)).toEqual([]);
    expect(await state.get(`waiting-message-body:${OTHER}:${lost.id}`)).toBeUndefined();
    expect(await state.get("dedupe:Ev-taken")).toBe("b");
  });

  it("hands the messages of a process that no longer beats over once, whoever adopts them, and leaves the live one's", async () => {
    stores = testStores(kind);
    const [a, b] = [await stores.open(), await stores.open()];
    const [ledgerA, ledgerB] = [new TurnLedger(a), new TurnLedger(b)];
    const [waitingA, waitingB] = [new WaitingMessages(a, ledgerA), new WaitingMessages(b, ledgerB)];
    await waitingA.keep(kept(KEY, "dead"), input("second", 2));
    await waitingA.keep(kept(KEY, "dead"), input("first", 1));
    const live = kept(KEY, "live");
    await waitingA.keep(live, input("third", 3));
    await waitingA.keep(kept(OTHER, "live"), input("elsewhere", 4));
    const alive = async (owner: string) => owner === "live";

    expect((await waitingB.threads()).sort()).toEqual([KEY, OTHER].sort());
    expect(await waitingB.orphans(OTHER, alive)).toEqual([]);
    expect((await waitingB.orphans(KEY, alive)).map((o) => o.input.text)).toEqual(["first", "second"]);
    // Two processes adopting at once (each read the orphans before the other removed them).
    const [orphansA, orphansB] = await Promise.all([
      waitingA.orphans(KEY, alive),
      waitingB.orphans(KEY, alive),
    ]);
    for (const { kept: k, input: i } of [...orphansA, ...orphansB]) await ledgerA.hand(KEY, i, k.id);
    expect(await waitingB.adopt(KEY, alive)).toBe(2);
    expect(await waitingA.adopt(KEY, alive)).toBe(0);
    expect((await ledgerB.takeHanded(KEY)).map((m) => m.text)).toEqual(["first", "second"]);

    // The live process's message stays until it forgets it; then its thread is unlisted.
    expect((await waitingB.orphans(KEY, async () => false)).map((o) => o.input.text)).toEqual(["third"]);
    await waitingA.forget(live);
    await expect.poll(() => waitingB.threads()).toEqual([OTHER]);
  });

  it("keeps a message far longer than a list member may be on SQL (1,024 characters), files and all", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const ledger = new TurnLedger(store);
    const waiting = new WaitingMessages(store, ledger);
    const long = {
      ...input("x".repeat(20_000), 1),
      files: Array.from({ length: 10 }, (_, i) => ({
        name: `report-${i}.pdf`,
        mimeType: "application/pdf",
        size: 1_000,
        url: `https://files.example/${"a".repeat(200)}/${i}`,
      })),
    };
    await waiting.keep(kept(KEY, "dead"), long);
    expect(await waiting.adopt(KEY, async () => false)).toBe(1);
    expect(await ledger.takeHanded(KEY)).toEqual([long]);
  });

  it("leaves its thread listed for the start-up scan when its process dies just after the member is written", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const waiting = new WaitingMessages(store, new TurnLedger(store));
    const inside = (waiting as unknown as { state: StateStore }).state;
    const listAdd = inside.listAdd.bind(inside);
    const dying = kept(KEY, "dead");
    // The kill -9: no write reaches the store once the member is there.
    vi.spyOn(inside, "listAdd").mockImplementation(async (list, member) => {
      if ((await inside.listMembers(`waiting-message:${KEY}`)).length > 0) throw new Error("killed");
      return listAdd(list, member);
    });
    await expect(waiting.keep(dying, input("kept as it died", 1))).rejects.toThrow("killed");
    vi.restoreAllMocks();
    const scan = new WaitingMessages(store, new TurnLedger(store));
    expect(await scan.threads()).toEqual([KEY]);
    expect((await scan.orphans(KEY, async () => false)).map((o) => o.input.text)).toEqual([
      "kept as it died",
    ]);
  });

  it("drops a member it cannot read or whose message is gone, and unlists a thread left with none", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const waiting = new WaitingMessages(store, new TurnLedger(store));
    const state = createState(store);
    await state.listAdd(`waiting-message:${KEY}`, "not a member");
    await state.listAdd(`waiting-message:${KEY}`, "m-gone|dead");
    await state.listAdd("waiting-messages", KEY);
    expect(await waiting.orphans(KEY, async () => false)).toEqual([]);
    expect(await state.listMembers(`waiting-message:${KEY}`)).toEqual([]);
    expect(await waiting.orphans(KEY, async () => false)).toEqual([]);
    expect(await waiting.threads()).toEqual([]);
  });

  it("lets the turn that begins claim its message under the thread's lock: false once another process adopted it", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const ledger = new TurnLedger(store);
    const waiting = new WaitingMessages(store, ledger);
    const state = createState(store);
    const lease = (await state.acquireLock(`lock:${KEY}`, 30_000, "me"))!;
    const mine = kept(KEY, "me");
    await waiting.keep(mine, input("mine", 1));
    expect(await waiting.forget(mine, lease)).toBe(true);

    const adopted = kept(KEY, "me");
    await waiting.keep(adopted, input("adopted", 2));
    // Its process looked dead to another one (it stalled past its heartbeat), which adopted it.
    expect(await waiting.adopt(KEY, async () => false)).toBe(1);
    expect(await waiting.forget(adopted, lease)).toBe(false);
    expect((await ledger.takeHanded(KEY)).map((m) => m.text)).toEqual(["adopted"]);

    // A lease no longer held is not a claim lost: the turn goes on to meet the lost lock itself.
    const late = kept(KEY, "me");
    await waiting.keep(late, input("late", 3));
    await state.releaseLock(lease);
    expect(await waiting.forget(late, lease)).toBe(true);
    await expect.poll(() => waiting.threads()).toEqual([]);
  });

  it("takes its handed copy back when the adopter's lease is gone: the thread's new holder adopts the message", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const ledger = new TurnLedger(store);
    const waiting = new WaitingMessages(store, ledger);
    const state = createState(store);
    const lease = (await state.acquireLock(`lock:${KEY}`, 30_000, "adopter"))!;
    await state.releaseLock(lease);
    await waiting.keep(kept(KEY, "dead"), input("one", 1));
    expect(await waiting.adopt(KEY, async () => false, lease)).toBe(0);
    expect(await ledger.takeHanded(KEY)).toEqual([]);
    expect((await waiting.orphans(KEY, async () => false)).map((o) => o.input.text)).toEqual(["one"]);
  });
});
