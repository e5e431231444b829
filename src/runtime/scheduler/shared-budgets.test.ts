import { afterEach, expect, it, vi } from "vitest";
import { createState } from "../../store/state.js";
import { describeEachStore, type TestStores, testStores } from "../../store/testing.js";
import { IDLE_BUCKET_MS, type WritePolicy } from "./budgets.js";
import { SharedBudgets } from "./shared-budgets.js";

/**
 * "posts": 3 per 10 s, known from the start; "edits": 3 per 10 s, known only once a 429
 * taught it; "minute": 1 per minute, known; "tier": 7 per minute, known.
 */
const policy: WritePolicy = {
  limitOf(bucket, learned) {
    if (bucket === "posts") return { capacity: 3, windowMs: 10_000 };
    if (bucket === "minute") return { capacity: 1, windowMs: 60_000 };
    if (bucket === "tier") return { capacity: 7, windowMs: 60_000 };
    if (bucket === "edits" && learned) return { capacity: 3, windowMs: 10_000 };
    return undefined;
  },
};

describeEachStore("write budgets shared by replicas on %s", (kind) => {
  let stores: TestStores;
  const open: SharedBudgets[] = [];

  afterEach(async () => {
    vi.useRealTimers();
    await Promise.all(open.splice(0).map((b) => b.close()));
    await stores.dispose();
  });

  async function replicas(): Promise<[SharedBudgets, SharedBudgets]> {
    stores = testStores(kind);
    const a = new SharedBudgets(policy, createState(await stores.open()), "test");
    const b = new SharedBudgets(policy, createState(await stores.open()), "test");
    open.push(a, b);
    return [a, b];
  }

  /**
   * The clock stands still, and the replicas sync only when the test says: a sync their own
   * timers started just before the test's (on a busy database, still reading the others'
   * records) would hand the test its stale reading, and the interleaving is what is tested.
   * Before the replicas start, so that their timers are fake ones.
   */
  function inTurns(): void {
    vi.useFakeTimers({ toFake: ["Date", "setInterval", "clearInterval"] });
  }

  /** Three replicas, each having published once, so that each knows there are three of them. */
  async function threeSynced(): Promise<[SharedBudgets, SharedBudgets, SharedBudgets]> {
    const [a, b] = await replicas();
    const c = new SharedBudgets(policy, createState(await stores.open()), "test");
    open.push(c);
    for (const r of [a, b, c]) r.spend(["unlimited"], Date.now());
    for (const r of [a, b, c, a, b, c]) await r.sync();
    return [a, b, c];
  }

  it("counts what another replica spent once it has synced, and not before", async () => {
    const [a, b] = await replicas();
    const now = Date.now();
    a.spend(["posts"], now);
    a.spend(["posts"], now + 1);
    a.spend(["posts"], now + 2);
    expect(a.wait("posts", 0, now + 3)).toBeGreaterThan(9_000);
    // Not synced yet: the other replica still sees room.
    expect(b.wait("posts", 0, now + 3)).toBe(0);
    await a.sync();
    await b.sync();
    expect(b.wait("posts", 0, now + 3)).toBe(10_000 - 3);
    // Once the window has passed, the room is back for both.
    expect(b.wait("posts", 0, now + 10_001)).toBe(0);
  });

  it("lets each of three replicas grant only its share of a known budget between two syncs", async () => {
    const [a, b, c] = await threeSynced();
    const now = Date.now();
    // A burst reaches all three at once: "posts" allows 3, so one each before anyone hears of the others.
    for (const r of [a, b, c]) {
      expect(r.wait("posts", 0, now)).toBe(0);
      r.spend(["posts"], now);
      const wait = r.wait("posts", 0, now);
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(250);
    }
    // Synced: the window is full for everyone until it passes.
    for (const r of [a, b, c]) await r.sync();
    for (const r of [a, b, c]) await r.sync();
    for (const r of [a, b, c]) expect(r.wait("posts", 0, now + 1)).toBeGreaterThan(9_000);
    // A bucket without a known limit is not split.
    a.spend(["edits"], now);
    expect(a.wait("edits", 0, now)).toBe(0);
  });

  it("gives what cannot be split of a long window to one replica at a time, in turns", async () => {
    inTurns();
    const [a, b, c] = await threeSynced();
    try {
      const start = Math.ceil(Date.now() / 250) * 250 + 1_000;
      const takers: number[] = [];
      for (let period = 0; period < 6; period++) {
        const now = start + period * 250;
        vi.setSystemTime(now);
        // Each has a write waiting for it and syncs, one after the other.
        for (const r of [a, b, c]) {
          r.wait("minute", 0, now);
          await r.sync();
        }
        // One slot left in the minute: at most one replica may take it before the next sync.
        const may = [a, b, c].flatMap((r, i) => (r.wait("minute", 0, now) === 0 ? [i] : []));
        expect(may.length).toBeLessThanOrEqual(1);
        takers.push(...may);
      }
      // The turn passes on; a claim made in the last period still holds the slot until its
      // owner withdraws it at its next sync, so now and then a period passes without one.
      expect(takers.length).toBeGreaterThanOrEqual(3);
      expect(new Set(takers).size).toBeGreaterThanOrEqual(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it("never grants more of a long window than it holds, however the replicas' syncs interleave", async () => {
    // A claim lasts a second, and 36 syncs on a busy database may take longer: the
    // interleaving is what is tested here, not a claim's expiry.
    inTurns();
    const [a, b, c] = await threeSynced();
    try {
      let granted = 0;
      const takers = new Set<SharedBudgets>();
      // Each replica in turn syncs and then grants all it may: every other replica's grants
      // since its own last publication are unknown to it.
      for (let round = 0; round < 12; round++) {
        for (const r of [a, b, c]) {
          await r.sync();
          while (r.wait("tier", 0, Date.now()) === 0) {
            r.spend(["tier"], Date.now());
            granted += 1;
            takers.add(r);
          }
          // A bucket newly wanted starts a sync of its own: finished before the next replica syncs.
          await r.sync();
        }
      }
      // All of the window is used, and none beyond it.
      expect(granted).toBe(7);
      expect(takers.size).toBeGreaterThan(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("never grants more of a long window than it holds when the replicas sync at the same moment", async () => {
    inTurns();
    const [a, b, c] = await threeSynced();
    try {
      let granted = 0;
      const grantAll = (r: SharedBudgets) => {
        while (r.wait("tier", 0, Date.now()) === 0) {
          r.spend(["tier"], Date.now());
          granted += 1;
        }
      };
      for (let round = 0; round < 12; round++) {
        // Writes reach all three at the same moment, and all three sync at once: each
        // reads the others' records while the others are computing and publishing theirs.
        for (const r of [a, b, c]) grantAll(r);
        await Promise.all([a.sync(), b.sync(), c.sync()]);
        for (const r of [a, b, c]) grantAll(r);
      }
      expect(granted).toBeLessThanOrEqual(7);
      // The claims are taken in turns, not refused to all: the window is still used.
      expect(granted).toBeGreaterThanOrEqual(5);
    } finally {
      vi.useRealTimers();
    }
  });

  it("claims nothing while a stopped replica's claim lock lasts, and claims again once it expires", async () => {
    const [a, b] = await replicas();
    for (const r of [a, b]) r.spend(["unlimited"], Date.now());
    for (const r of [a, b, a, b]) await r.sync();
    // A replica that stopped in the middle of its claim left the lock behind.
    const stopped = await createState(await stores.open()).acquireLock("budget-claims:test", 200);
    expect(stopped).toBeDefined();
    let granted = 0;
    const grantAll = () => {
      while (a.wait("tier", 0, Date.now()) === 0 && granted < 10) {
        a.spend(["tier"], Date.now());
        granted += 1;
      }
    };
    // Only the one write per sync that a replica may send unclaimed while the minute has
    // room for two each: the sync could not claim (with the lock, half of the six left).
    grantAll();
    await a.sync();
    grantAll();
    expect(granted).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 250));
    await a.sync();
    grantAll();
    // Half of the five left.
    expect(granted).toBe(2 + 2);
  });

  it("withdraws its claims when it stops, so that the others may use them at once", async () => {
    // As above: c's claim must not expire on a slow database.
    inTurns();
    const [a, b, c] = await threeSynced();
    try {
      // Each in turn wants "tier" (7 a minute) and claims its share of what the others left: 2, 1, 1.
      for (const r of [a, b, c]) {
        r.wait("tier", 0, Date.now());
        await r.sync();
      }
      await a.close();
      open.splice(open.indexOf(a), 1);
      b.wait("tier", 0, Date.now());
      await b.sync();
      // a's two are free again: b's share is half of the six that c's claim leaves.
      let granted = 0;
      while (b.wait("tier", 0, Date.now()) === 0 && granted < 10) {
        b.spend(["tier"], Date.now());
        granted += 1;
      }
      expect(granted).toBe(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it("shares a pause and what a 429 taught about a limit", async () => {
    const [a, b] = await replicas();
    const now = Date.now();
    b.spend(["edits"], now);
    a.spend(["edits"], now + 1);
    await a.sync();
    await b.sync();
    // Unknown limit: no wait for edits, however many were sent.
    expect(b.wait("edits", 0, now + 2)).toBe(0);
    a.pause("edits", 5_000, now);
    await a.sync();
    await b.sync();
    expect(b.wait("edits", 0, now + 1_000)).toBe(4_000);
    expect(b.wait("edits", 0, now + 6_000)).toBe(0);
    // b never met a 429, but knows the limit now (3 per 10 s): with a's edit, a third fills the window.
    b.spend(["edits"], now + 6_000);
    expect(b.wait("edits", 0, now + 6_000)).toBe(4_000);
  });

  it("splits a limit learned from one replica's 429 between the replicas, as it does a known one", async () => {
    const [a, b] = await replicas();
    const c = new SharedBudgets(policy, createState(await stores.open()), "test");
    open.push(c);
    for (const r of [a, b, c]) r.spend(["unlimited"], Date.now());
    const start = Date.now();
    // a met a 429 on "edits", paused for a moment: 3 per 10 s from now on, for all three.
    a.pause("edits", 1, start);
    for (const r of [a, b, c, a, b, c]) await r.sync();
    const now = Date.now() + 5;
    // A burst reaching all three at once: one edit each before anyone hears of the others.
    for (const r of [a, b, c]) {
      expect(r.wait("edits", 0, now)).toBe(0);
      r.spend(["edits"], now);
      expect(r.wait("edits", 0, now)).toBeGreaterThan(0);
    }
  });

  it("learns that a wide bucket is spent from 429s met in two replicas, as one replica would from two", async () => {
    const [a, b] = await replicas();
    const now = Date.now();
    expect(a.limitedWithin("edits", "edits:C1", now)).toBe(false);
    await a.sync();
    await b.sync();
    // b's first 429, in another channel: with a's, two parts of the workspace's bucket met one.
    expect(b.limitedWithin("edits", "edits:C2", now + 10)).toBe(true);
  });

  it("keeps counting the writes of a replica that stopped, for as long as their window lasts", async () => {
    const [a, b] = await replicas();
    const now = Date.now();
    for (let i = 0; i < 3; i++) a.spend(["posts"], now);
    await a.close();
    await b.sync();
    expect(b.wait("posts", 0, now + 100)).toBe(9_900);
  });

  it("grants a write asked for after it stopped by the windows it knows, instead of polling for a sync that never comes", async () => {
    const [a, b] = await replicas();
    for (const r of [a, b, a, b]) {
      r.spend(["unlimited"], Date.now());
      await r.sync();
    }
    await a.close();
    // Before, a's share (one of "posts"' three, half of "tier"'s seven) was spent at once,
    // and every later write waited 1 ms at a time for a sync that the closed a never made.
    const grantedWithin = (key: string, max: number) => {
      const now = Date.now();
      let granted = 0;
      while (granted < max && a.wait(key, 0, now) === 0) {
        a.spend([key], now);
        granted += 1;
      }
      return { granted, next: a.wait(key, 0, now) };
    };
    const posts = grantedWithin("posts", 10);
    expect(posts.granted).toBe(3);
    expect(posts.next).toBeGreaterThan(9_000);
    const tier = grantedWithin("tier", 10);
    expect(tier.granted).toBe(7);
    expect(tier.next).toBeGreaterThan(59_000);
    // What it still writes is published: the other replica counts it.
    await vi.waitFor(async () => {
      await b.sync();
      expect(b.wait("posts", 0, Date.now())).toBeGreaterThan(9_000);
    });
  });

  it("publishes a record that stays small however many interactions' buckets it used", async () => {
    inTurns();
    const [a] = await replicas();
    const reader = createState(await stores.open());
    const published = async () => {
      await a.sync();
      const [owner] = await reader.listMembers("budgets:test");
      return reader.get<{ spent: object; paused: object; learned: string[] }>(`budget:test:${owner}`);
    };
    try {
      const start = Date.now();
      // Five hundred interactions, each written to and refused once: a 429 on one token's
      // bucket teaches nothing of the next (no limit either way), so none is listed as learned.
      for (let i = 0; i < 500; i++) {
        a.spend([`hook:${i}`], start);
        a.pause(`hook:${i}`, 1_000, start);
      }
      // A limit a 429 did teach, paused for longer than a bucket may stay idle.
      a.pause("edits", 2 * IDLE_BUCKET_MS, start);
      expect((await published())?.learned).toEqual(["edits"]);
      vi.setSystemTime(start + IDLE_BUCKET_MS + 60_000);
      const idle = await published();
      expect(idle?.spent).toEqual({});
      expect(idle?.paused).toEqual({ edits: start + 2 * IDLE_BUCKET_MS });
      expect(idle?.learned).toEqual(["edits"]);
      // Its pause over and nothing written since, the last bucket is forgotten too.
      vi.setSystemTime(start + 2 * IDLE_BUCKET_MS + 60_000);
      const empty = await published();
      expect(empty?.paused).toEqual({});
      expect(empty?.learned).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });
});
