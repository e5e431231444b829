import { afterEach, describe, expect, it } from "vitest";
import { createDedupe, MemoryDedupe, StoreDedupe } from "./dedupe.js";
import { ClaimLost, LockLost } from "./locks.js";
import { createState } from "./state.js";
import { describeEachStore, type TestStores, testStores } from "./testing.js";
import { TurnLedger } from "./turns.js";

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

  describe("a redelivery (the platform had no acknowledgement)", () => {
    const live = new Set<string>();
    const alive = async (owner: string) => live.has(owner);
    const replica = async (owner: string, patienceMs = 600) => {
      live.add(owner);
      return new StoreDedupe(await stores.open(), owner, patienceMs);
    };
    afterEach(() => live.clear());
    /** Held as the bot holds a message: in the write that stores it (here a list member). */
    const hold = async (d: StoreDedupe, id: string) =>
      (await createState(await stores.open()).listAddClaiming("held-here", id, d.holding([id]))) ===
      "written";

    it("is this process's when nobody saw the message, and only once", async () => {
      stores = testStores(kind);
      const b = await replica("b");
      expect(await b.redelivered("Ev-new", alive)).toBe(true);
      expect(await b.redelivered("Ev-new", alive)).toBe(false);
      expect(await b.firstSight("Ev-new")).toBe(false);
    });

    it("is taken over from a process that stopped before it held the message, by one of two replicas", async () => {
      stores = testStores(kind);
      const doomed = await replica("doomed");
      expect(await doomed.firstSight("Ev1")).toBe(true);
      live.delete("doomed");
      const [b, c] = [await replica("b"), await replica("c")];
      const taken = await Promise.all([b.redelivered("Ev1", alive), c.redelivered("Ev1", alive)]);
      expect(taken.filter(Boolean)).toHaveLength(1);
      // The new claimant's own: nobody takes it from a live process, and it can hold it.
      const d = await replica("d");
      expect(await d.redelivered("Ev1", alive)).toBe(false);
      const winner = taken[0] ? b : c;
      await hold(winner, "Ev1");
      live.clear();
      expect(await (await replica("e")).redelivered("Ev1", alive)).toBe(false);
    });

    it("can be held by its claimant, again and again, but not once another process took it over", async () => {
      stores = testStores(kind);
      const [stalls, b] = [await replica("stalls"), await replica("b")];
      expect(await stalls.firstSight("Ev-kept")).toBe(true);
      expect(await hold(stalls, "Ev-kept")).toBe(true);
      // A kept copy held it, then its turn's record holds it again.
      expect(await hold(stalls, "Ev-kept")).toBe(true);
      expect(await stalls.firstSight("Ev-stalled")).toBe(true);
      // Its process stalled past its heartbeat: to the others it stopped, and one took the message.
      live.delete("stalls");
      expect(await b.redelivered("Ev-stalled", alive)).toBe(true);
      expect(await hold(stalls, "Ev-stalled")).toBe(false);
      expect(await hold(b, "Ev-stalled")).toBe(true);
      // A claim the store lost meanwhile was nobody else's: held, and seen from then on.
      expect(await hold(stalls, "Ev-lost-key")).toBe(true);
      expect(await b.redelivered("Ev-lost-key", alive)).toBe(false);
    });

    it("is held in the very write that stores its turn's record, or neither is written", async () => {
      stores = testStores(kind);
      const [a, b] = [await replica("a"), await replica("b")];
      const store = await stores.open();
      const [ledger, state] = [new TurnLedger(store), createState(store)];
      const run = {
        id: "r1",
        owner: "a",
        input: { text: "hi", user: { id: "U1" }, channel: "C1", sentAt: 0 },
      };
      const lease = (await state.acquireLock("slack:T1:C1:1", 60_000, "a"))!;
      expect(await a.firstSight("Ev-rec")).toBe(true);
      expect(await a.firstSight("open:Ev-rec")).toBe(true);
      await ledger.opened(ledger.open("slack:T1:C1:1", run, lease, a.holding(["Ev-rec", "open:Ev-rec"])));
      expect(await ledger.get("slack:T1:C1:1")).toMatchObject({ id: "r1", owner: "a" });
      live.delete("a");
      expect(await b.redelivered("Ev-rec", alive)).toBe(false);
      expect(await b.redelivered("open:Ev-rec", alive, false)).toBe(false);
      // Taken over while its process looked dead, before it stored the message: nothing written.
      expect(await a.firstSight("Ev-taken")).toBe(true);
      expect(await b.redelivered("Ev-taken", alive)).toBe(true);
      const taken = ledger.open("slack:T1:C1:2", run, undefined, a.holding(["Ev-taken"]));
      await expect(ledger.opened(taken)).rejects.toBeInstanceOf(ClaimLost);
      expect(await ledger.get("slack:T1:C1:2")).toBeUndefined();
      expect(await state.get("dedupe:Ev-taken")).toBe("b");
      // Its thread's lock lost: neither written either, and the claim still only claimed.
      expect(await a.firstSight("Ev-fenced")).toBe(true);
      const stale = { key: lease.key, token: "another-token" };
      const fenced = ledger.open("slack:T1:C1:3", run, stale, a.holding(["Ev-fenced"]));
      const refused = await ledger.opened(fenced).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(LockLost);
      expect(refused).not.toBeInstanceOf(ClaimLost);
      expect(await ledger.get("slack:T1:C1:3")).toBeUndefined();
      expect(await state.get("dedupe:Ev-fenced")).toBe("a");
      // Held already (a kept copy), or a claim the store lost: written, and held.
      await hold(a, "Ev-kept");
      await ledger.opened(ledger.open("slack:T1:C1:4", run, lease, a.holding(["Ev-kept", "Ev-lost"])));
      expect(await state.get("dedupe:Ev-kept")).toBe("held:a");
      expect(await state.get("dedupe:Ev-lost")).toBe("held:a");
      // Handed over at a stop: held as it is handed; once another process took it, nothing handed.
      expect(await a.firstSight("Ev-hand")).toBe(true);
      await ledger.hand("slack:T1:C1:5", run.input, "h1", a.holding(["Ev-hand"]));
      expect(await state.get("dedupe:Ev-hand")).toBe("held:a");
      expect(await a.firstSight("Ev-hand-taken")).toBe(true);
      expect(await b.redelivered("Ev-hand-taken", alive)).toBe(true);
      const handed = ledger.hand("slack:T1:C1:6", run.input, "h2", a.holding(["Ev-hand-taken"]));
      await expect(handed).rejects.toBeInstanceOf(ClaimLost);
      expect(await ledger.takeHanded("slack:T1:C1:6")).toEqual([]);
      expect((await ledger.takeHanded("slack:T1:C1:5")).map((m) => m.text)).toEqual(["hi"]);
    });

    it("is left to a process that held the message, even once it stopped", async () => {
      stores = testStores(kind);
      const doomed = await replica("doomed");
      expect(await doomed.firstSight("Ev1")).toBe(true);
      await hold(doomed, "Ev1");
      live.delete("doomed");
      expect(await (await replica("b")).redelivered("Ev1", alive)).toBe(false);
    });

    it("waits for a live claimant: taken once it stops, left to it once it holds the message", async () => {
      stores = testStores(kind);
      const [slow, stalled] = [await replica("slow"), await replica("stalled")];
      expect(await slow.firstSight("Ev-held")).toBe(true);
      expect(await stalled.firstSight("Ev-gone")).toBe(true);
      const b = await replica("b", 5_000);
      const asked = Date.now();
      const [held, gone] = [b.redelivered("Ev-held", alive), b.redelivered("Ev-gone", alive)];
      await wait(300);
      await hold(slow, "Ev-held");
      live.delete("stalled");
      expect(await Promise.all([held, gone])).toEqual([false, true]);
      expect(Date.now() - asked).toBeLessThan(4_000);
    });

    it("gives up on a live claimant that neither holds the message nor stops within its patience", async () => {
      stores = testStores(kind);
      const a = await replica("a");
      expect(await a.firstSight("Ev1")).toBe(true);
      const asked = Date.now();
      expect(await (await replica("b", 400)).redelivered("Ev1", alive)).toBe(false);
      expect(Date.now() - asked).toBeGreaterThanOrEqual(400);
    });

    it("does not wait for a live claimant when told not to (a message's other ids), and takes a dead one's", async () => {
      stores = testStores(kind);
      const [a, doomed] = [await replica("a"), await replica("doomed")];
      expect(await a.firstSight("C1:1.0001")).toBe(true);
      expect(await doomed.firstSight("C1:2.0001")).toBe(true);
      live.delete("doomed");
      const b = await replica("b", 5_000);
      const asked = Date.now();
      expect(await b.redelivered("C1:1.0001", alive, false)).toBe(false);
      expect(await b.redelivered("C1:2.0001", alive, false)).toBe(true);
      expect(Date.now() - asked).toBeLessThan(2_000);
    });

    it("takes a live claimant's id once it gives it back, and a given-back id is only ever the giver's to give", async () => {
      stores = testStores(kind);
      const a = await replica("a");
      expect(await a.firstSight("Ev1")).toBe(true);
      const b = await replica("b", 5_000);
      const asked = Date.now();
      const waiting = b.redelivered("Ev1", alive);
      await wait(300);
      await a.release("Ev1");
      expect(await waiting).toBe(true);
      expect(Date.now() - asked).toBeLessThan(4_000);
      // b's now: a giving it back again changes nothing.
      await a.release("Ev1");
      expect(await (await replica("c")).firstSight("Ev1")).toBe(false);
      expect(await a.firstSight("Ev1")).toBe(false);
    });

    it("is not taken from a claim that names no process (an earlier version's)", async () => {
      stores = testStores(kind);
      const store = await stores.open();
      const { createState } = await import("./state.js");
      await createState(store).set("dedupe:Ev-old", 1, 60_000);
      expect(await (await replica("b")).redelivered("Ev-old", alive)).toBe(false);
    });
  });
});
