import { afterAll, afterEach, describe, expect, it } from "vitest";
import { blockFor } from "../../test/support/event-loop.js";
import { liveProcesses } from "./heartbeat.js";
import type { Store } from "./index.js";
import { createThreadLock, LeaseThreadLock, LocalThreadLock, LockLost, type ThreadLock } from "./locks.js";
import { createState, type Lease, type StateStore } from "./state.js";
import { describeEachStore, needsServer, type TestStores, testStores } from "./testing.js";

const tick = () => new Promise<void>((r) => setTimeout(r, 1));

/** A promise the test settles by hand: a turn held open, or a turn seen to start. */
function gate(): { passed: Promise<void>; open: () => void } {
  let open!: () => void;
  const passed = new Promise<void>((r) => {
    open = r;
  });
  return { passed, open };
}

/** Resolves when `n` parties have arrived; a lock that serialises them never gets there. */
function barrier(n: number, name: string) {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  let timer: NodeJS.Timeout | undefined;
  const failed = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name}: the others never arrived`)), 5_000);
  });
  return async () => {
    arrived++;
    if (arrived === n) {
      clearTimeout(timer);
      open();
    }
    await Promise.race([opened, failed]);
  };
}

const redisStores = testStores("redis");
let redisStore: Store | undefined;
async function sharedRedisStore(): Promise<Store> {
  redisStore ??= await redisStores.open();
  return redisStore;
}
afterAll(async () => {
  await redisStores.dispose();
});

/** What every ThreadLock does, whichever `make` returns. */
const threadLockSpec = (make: () => Promise<ThreadLock>) => () => {
  it("runs 20 concurrent turns of one thread one at a time, in arrival order", async () => {
    const lock = await make();
    const order: number[] = [];
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        lock.run("t1", async () => {
          inside++;
          most = Math.max(most, inside);
          await tick();
          order.push(i);
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it("runs turns of different threads at the same time", async () => {
    const lock = await make();
    const meet = barrier(3, "threads");
    await Promise.all(["a", "b", "c"].map((key) => lock.run(key, meet)));
  });

  it("runs the next turn after one that threw, and gives the error to its own caller", async () => {
    const lock = await make();
    const failing = lock.run("t2", async () => {
      throw new Error("model down");
    });
    const next = lock.run("t2", async () => "answered");
    await expect(failing).rejects.toThrow("model down");
    await expect(next).resolves.toBe("answered");
  });

  it("counts running and waiting turns and forgets an idle thread", async () => {
    const lock = await make();
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const first = lock.run("t3", () => held);
    const second = lock.run("t3", async () => {});
    expect(lock.queued("t3")).toBe(2);
    expect(lock.queued("other")).toBe(0);
    release();
    await Promise.all([first, second]);
    expect(lock.queued("t3")).toBe(0);
  });
};

describe(
  "in-process ThreadLock",
  threadLockSpec(async () => new LocalThreadLock()),
);
describe(
  "redis ThreadLock",
  needsServer("redis"),
  threadLockSpec(async () => createThreadLock(await sharedRedisStore())),
);

describeEachStore("the thread lock across processes on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    await stores.dispose();
  });

  it("never lets two processes run turns of the same thread at once", async () => {
    stores = testStores(kind);
    const processes = [createThreadLock(await stores.open()), createThreadLock(await stores.open())];
    let inside = 0;
    let most = 0;
    const done: string[] = [];
    await Promise.all(
      processes.flatMap((lock, r) =>
        Array.from({ length: 8 }, (_, i) =>
          lock.run("shared", async () => {
            inside++;
            most = Math.max(most, inside);
            await tick();
            done.push(`${r}:${i}`);
            inside--;
          }),
        ),
      ),
    );
    expect(most).toBe(1);
    expect(done).toHaveLength(16);
    for (const r of [0, 1]) {
      const mine = done.filter((d) => d.startsWith(`${r}:`));
      expect(mine).toEqual(Array.from({ length: 8 }, (_, i) => `${r}:${i}`));
    }
  });

  it("keeps the lock past its expiry while a long turn is still running", async () => {
    stores = testStores(kind);
    // The turn outlasts three expiries; renewals come ten times per expiry, so a busy
    // machine (the whole suite on two cores) must stall 450 ms to lose the lease.
    const short = { ttlMs: 500, renewEveryMs: 50, maxPollMs: 20 };
    const a = createThreadLock(await stores.open(), short);
    const b = createThreadLock(await stores.open(), short);
    const events: string[] = [];
    const started = gate();
    const long = a.run("renewed", async () => {
      events.push("a start");
      started.open();
      await new Promise((r) => setTimeout(r, 1_500));
      events.push("a end");
    });
    await started.passed;
    await b.run("renewed", async () => {
      events.push("b");
    });
    await long;
    expect(events).toEqual(["a start", "a end", "b"]);
  });

  it("lets another process take a thread whose holder died, once the lease expires", async () => {
    stores = testStores(kind);
    const dead = createState(await stores.open());
    // From before the lease is taken: opening the second store may take a while on a busy machine.
    const started = performance.now();
    expect(await dead.acquireLock("orphan", 200)).toBeDefined();
    const lock = createThreadLock(await stores.open(), { ttlMs: 200, maxPollMs: 20 });
    await lock.run("orphan", async () => undefined);
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
  });

  it("leaves no lock behind when the turn ends", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const state = createState(store);
    const lock = createThreadLock(store);
    let during: Lease | undefined;
    await lock.run("cleanup", async () => {
      during = await state.acquireLock("cleanup", 1_000);
    });
    expect(during).toBeUndefined();
    const after = await state.acquireLock("cleanup", 1_000);
    expect(after).toBeDefined();
  });

  it("answers a thread's messages waiting in two processes in the order they were sent, not the order they got the lock", async () => {
    stores = testStores(kind);
    // B polls slowly: without the line, A's next turn takes the lock the moment A lets it go.
    const a = createThreadLock(await stores.open(), { maxPollMs: 200 });
    const b = createThreadLock(await stores.open(), { maxPollMs: 200 });
    const order: number[] = [];
    const holding = gate();
    const started = gate();
    const turn = (n: number, wait?: Promise<void>) => async () => {
      started.open();
      await wait;
      order.push(n);
    };
    const m1 = a.run("line", turn(1, holding.passed), 1_000);
    await started.passed;
    const m2 = b.run("line", turn(2), 2_000);
    // Sent third, queued behind the first in the same process.
    const m3 = a.run("line", turn(3), 3_000);
    await new Promise((r) => setTimeout(r, 300));
    holding.open();
    await Promise.all([m1, m2, m3]);
    expect(order).toEqual([1, 2, 3]);
    await Promise.all([a.close(), b.close()]);
  });

  it("tries its first heartbeat again at the next turn when the store refused it", async () => {
    stores = testStores(kind);
    let refusals = 1;
    // The store refuses the process's first sign of life once (a failover, a busy SQLite).
    const flaky = (state: StateStore): StateStore =>
      new Proxy(state, {
        get(target, prop) {
          if (prop === "set")
            return (key: string, value: unknown, ttlMs?: number) => {
              if (key.startsWith("alive:") && refusals-- > 0) return Promise.reject(new Error("SQLITE_BUSY"));
              return target.set(key, value, ttlMs);
            };
          const value = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    const lock = new LeaseThreadLock(flaky(createState(await stores.open())), { maxPollMs: 20 });
    try {
      await expect(lock.run("t", async () => "first")).rejects.toThrow("SQLITE_BUSY");
      await expect(lock.run("t", async () => "second")).resolves.toBe("second");
      expect(await lock.alive(lock.owner)).toBe(true);
    } finally {
      await lock.close();
    }
  });

  it("takes a free thread's lock without a ticket in its line, and queues one (saying it waits) only when the lock is taken", async () => {
    stores = testStores(kind);
    const lines: string[] = [];
    /** The process's state, with the lines it queues a ticket in written down. */
    const watched = (state: StateStore): StateStore =>
      new Proxy(state, {
        get(target, prop) {
          if (prop === "listAdd")
            return (list: string, member: string) => {
              if (list.startsWith("line:")) lines.push(list);
              return target.listAdd(list, member);
            };
          const value = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    const a = new LeaseThreadLock(watched(createState(await stores.open())), { maxPollMs: 20 });
    const b = new LeaseThreadLock(watched(createState(await stores.open())), { maxPollMs: 20 });
    const waited: string[] = [];
    await a.run(
      "free",
      async () => undefined,
      1_000,
      () => waited.push("free"),
    );
    expect(lines).toEqual([]);
    const holding = gate();
    const started = gate();
    const first = a.run(
      "taken",
      async () => {
        started.open();
        await holding.passed;
      },
      2_000,
      () => waited.push("first"),
    );
    await started.passed;
    const second = b.run(
      "taken",
      async () => undefined,
      3_000,
      () => waited.push("second"),
    );
    await new Promise((r) => setTimeout(r, 100));
    expect(lines).toEqual(["line:taken"]);
    expect(waited).toEqual(["second"]);
    holding.open();
    await Promise.all([first, second]);
    await Promise.all([a.close(), b.close()]);
  });

  it("does not wait for a message whose process stopped before it got the lock", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    // A ticket an earlier process left: sent before, but that process no longer beats.
    await createState(store).listAdd("line:orphaned", "1000|a-process-that-died|x");
    const lock = createThreadLock(await stores.open(), { maxPollMs: 20 });
    const started = Date.now();
    await lock.run("orphaned", async () => undefined, 2_000);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await createState(store).listMembers("line:orphaned")).toEqual([]);
    await lock.close();
  });

  it("tells the holder its lock is lost when its lease was taken, at its next renewal", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const other = createState(await stores.open());
    const lock = createThreadLock(store, { ttlMs: 3_000, renewEveryMs: 100 });
    const reason = await lock.run("stolen", async ({ lost, lease }) => {
      expect(lost.aborted).toBe(false);
      // Another process frees the lease (as it does for a process it believes gone) and takes it.
      await other.releaseLock(lease!);
      expect(await other.acquireLock("stolen", 3_000)).toBeDefined();
      await new Promise<void>((r) => lost.addEventListener("abort", () => r(), { once: true }));
      return lost.reason as unknown;
    });
    expect(reason).toBeInstanceOf(LockLost);
    await lock.close();
  });

  it("checks its leases at once after the process stalled past half the heartbeat's life", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const other = createState(await stores.open());
    // Renewal far off: only the stall check can notice within the test.
    const lock = createThreadLock(store, { ttlMs: 60_000, renewEveryMs: 60_000 });
    const seen = await lock.run("stalled", async ({ lost, lease }) => {
      await other.releaseLock(lease!);
      await other.acquireLock("stalled", 60_000);
      // The event loop blocked, as in a long GC pause.
      blockFor(2_500);
      const aborted = new Promise<boolean>((r) =>
        lost.addEventListener("abort", () => r(true), { once: true }),
      );
      return Promise.race([aborted, new Promise<boolean>((r) => setTimeout(() => r(false), 3_000))]);
    });
    expect(seen).toBe(true);
    await lock.close();
  });

  it("knows the processes that beat in the store, and forgets one at once when it closes", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    const [a, b] = [createThreadLock(store), createThreadLock(await stores.open())];
    expect(await liveProcesses(store)).toBe(0);
    expect(await a.others()).toEqual([]);
    expect(await b.others()).toEqual([a.owner]);
    expect(await a.others()).toEqual([b.owner]);
    expect(await liveProcesses(store)).toBe(2);
    expect(await a.alive(b.owner)).toBe(true);
    await b.close();
    expect(await a.alive(b.owner)).toBe(false);
    expect(await b.alive(b.owner)).toBe(false);
    expect(await a.others()).toEqual([]);
    expect(await liveProcesses(store)).toBe(1);
    await a.close();
  });
});
