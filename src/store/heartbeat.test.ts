import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it, vi } from "vitest";
import { StoreLink } from "../../test/support/cut-off-store.js";
import { blockFor } from "../../test/support/event-loop.js";
import { log } from "../log.js";
import { LeaseThreadLock, LockLost } from "./locks.js";
import { createState, type StateStore } from "./state.js";
import { describeEachStore, type TestStores, testStores } from "./testing.js";

/** A fraction of the production heartbeat (every 1 s, alive for 4 s, silent after 3 s), for short tests. */
const BEATS = { everyMs: 100, ttlMs: 1_000, silentAfterMs: 600 };

const SILENT = "the store has not confirmed this process's heartbeat";

/** Resolves with why `signal` was aborted. */
const reasonOf = (signal: AbortSignal) =>
  new Promise<unknown>((r) => {
    if (signal.aborted) r(signal.reason);
    else signal.addEventListener("abort", () => r(signal.reason), { once: true });
  });

describeEachStore("a process whose store stops confirming its heartbeat, on %s", (kind) => {
  let stores: TestStores;
  const links: StoreLink[] = [];
  afterEach(async () => {
    for (const link of links.splice(0)) link.restore();
    vi.restoreAllMocks();
    await stores.dispose();
  });

  /** A lock whose store calls go through a link the test can cut. */
  async function cutOffable(options: { ttlMs?: number } = {}) {
    stores = testStores(kind);
    const link = new StoreLink();
    links.push(link);
    const state = link.state(createState(await stores.open()));
    return { link, lock: new LeaseThreadLock(state, { ...options, heartbeat: BEATS, maxPollMs: 20 }) };
  }

  it("stops every turn it holds with LockLost, before its beat can expire, and says why once", async () => {
    const { link, lock } = await cutOffable();
    const warn = vi.spyOn(log, "warn");
    const reasons: Promise<unknown>[] = [];
    // Each turn ends once its lock is released, which waits for the store to answer again.
    const turns = ["a", "b"].map((key) =>
      lock.run(key, ({ lost }) => {
        reasons.push(reasonOf(lost));
        return reasons.at(-1)!;
      }),
    );
    await vi.waitFor(() => expect(reasons).toHaveLength(2));
    // The store has confirmed beats since both turns took their lease.
    await sleep(2 * BEATS.everyMs);
    link.cutOff();

    for (const reason of await Promise.all(reasons)) expect(reason).toBeInstanceOf(LockLost);
    expect(warn.mock.calls.filter(([, msg]) => String(msg).startsWith(SILENT))).toHaveLength(1);
    link.restore();
    await Promise.all(turns);
    await lock.close();
  });

  it("stops its turns after its event loop was held up past the silence, though the next beat is confirmed at once", async () => {
    const { lock } = await cutOffable();
    const reason = await lock.run("a", async ({ lost, current }) => {
      // The store has confirmed beats since the turn took its lease.
      await sleep(2 * BEATS.everyMs);
      expect(current()).toBe(true);
      // A long GC pause: the beat's timer and the silence's fall due together, the beat's
      // first; a fast store (SQLite) confirms that beat before the silence's timer runs.
      blockFor(BEATS.silentAfterMs + 200);
      return reasonOf(lost);
    });
    expect(reason).toBeInstanceOf(LockLost);
    await lock.close();
  });

  it("says a silence that is due as soon as a holder asks whether its lock is still its own", async () => {
    const { lock } = await cutOffable();
    const seen = await lock.run("a", async ({ lost, current }) => {
      await sleep(2 * BEATS.everyMs);
      blockFor(BEATS.silentAfterMs + 200);
      // No timer has run since: asked now, as a platform write is about to be granted.
      return { current: current(), lost: lost.aborted };
    });
    expect(seen).toEqual({ current: false, lost: true });
    await lock.close();
  });

  it("keeps its turns while the store confirms its beats", async () => {
    const { lock } = await cutOffable();
    const aborted = await lock.run("a", async ({ lost }) => {
      await sleep(3 * BEATS.silentAfterMs);
      return lost.aborted;
    });
    expect(aborted).toBe(false);
    await lock.close();
  });

  it("takes the thread's lock again once the store answers, over the lease it could not release while cut off", async () => {
    // A lease that outlives the test: waited out, the next turn would never start.
    const { link, lock } = await cutOffable({ ttlMs: 60_000 });
    let reason: Promise<unknown> | undefined;
    const first = lock.run("a", ({ lost }) => {
      reason = reasonOf(lost);
      return reason;
    });
    await vi.waitFor(() => expect(reason).toBeDefined());
    await sleep(2 * BEATS.everyMs);
    link.cutOff();
    expect(await reason).toBeInstanceOf(LockLost);
    // Its release is refused once the store is back (the request never reached it): the lease stays.
    link.restore();
    await first;

    await expect(lock.run("a", async ({ lost }) => lost.aborted)).resolves.toBe(false);
    await lock.close();
  });

  it("takes no lease while no beat is confirmed: a turn waits for the store to confirm one", async () => {
    stores = testStores(kind);
    let beatsRefused = false;
    // Only the beats fail: a lease would be granted.
    const beatless = (state: StateStore): StateStore =>
      new Proxy(state, {
        get(target, prop) {
          if (prop === "set")
            return (key: string, value: unknown, ttlMs?: number) =>
              beatsRefused && key.startsWith("alive:")
                ? Promise.reject(new Error("READONLY"))
                : target.set(key, value, ttlMs);
          const value = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    const lock = new LeaseThreadLock(beatless(createState(await stores.open())), { heartbeat: BEATS });
    const warn = vi.spyOn(log, "warn");
    await lock.run("a", async () => undefined);
    beatsRefused = true;
    await vi.waitFor(
      () => expect(warn.mock.calls.some(([, msg]) => String(msg).startsWith(SILENT))).toBe(true),
      {
        timeout: 5_000,
      },
    );
    let started = false;
    const turn = lock.run("a", async ({ lost }) => {
      started = true;
      return lost.aborted;
    });
    await sleep(3 * BEATS.everyMs);
    expect(started).toBe(false);
    beatsRefused = false;

    await expect(turn).resolves.toBe(false);
    await lock.close();
  });
});

describe("the heartbeat's timings", () => {
  it("refuse a silence that would come after the beat expires", () => {
    const state = {} as StateStore;
    expect(
      () => new LeaseThreadLock(state, { heartbeat: { everyMs: 100, ttlMs: 500, silentAfterMs: 600 } }),
    ).toThrow(/silentAfterMs < ttlMs/);
  });
});
