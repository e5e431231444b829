import { afterEach, expect, it, vi } from "vitest";
import { log } from "../log.js";
import { createThreadLock, LeaseThreadLock } from "./locks.js";
import { createState, type StateStore } from "./state.js";
import { describeEachStore, type TestStores, testStores } from "./testing.js";

/** A promise the test settles by hand: a turn held open, or a turn seen to start. */
function gate(): { passed: Promise<void>; open: () => void } {
  let open!: () => void;
  const passed = new Promise<void>((r) => {
    open = r;
  });
  return { passed, open };
}

/** The state of a process whose reads and removals of a thread's line fail while `down()` says so. */
function blinking(state: StateStore, down: () => boolean): StateStore {
  return new Proxy(state, {
    get(target, prop) {
      if (prop === "listMembers" || prop === "listRemove")
        return (list: string, member?: string) => {
          if (list.startsWith("line:") && down()) return Promise.reject(new Error("ECONNRESET"));
          return prop === "listMembers" ? target.listMembers(list) : target.listRemove(list, member ?? "");
        };
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describeEachStore("the line of a thread's waiting messages on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    vi.restoreAllMocks();
    await stores.dispose();
  });

  it("does not block a thread behind a ticket its live process failed to take back", async () => {
    stores = testStores(kind);
    const short = { ttlMs: 400, renewEveryMs: 100, maxPollMs: 20 };
    const store = await stores.open();
    const holder = createThreadLock(store, short);
    let down = false;
    const a = new LeaseThreadLock(
      blinking(createState(await stores.open()), () => down),
      short,
    );
    const b = createThreadLock(await stores.open(), short);
    const skipped = vi.spyOn(log, "warn");
    const holding = gate();
    const started = gate();
    const first = holder.run(
      "blip",
      async () => {
        started.open();
        await holding.passed;
      },
      1_000,
    );
    await started.passed;
    // A's message waits in the line; the store blinks while it waits, and its ticket stays.
    const waiting = a.run("blip", async () => "answered", 2_000);
    await vi.waitFor(async () => expect(await createState(store).listMembers("line:blip")).toHaveLength(1));
    down = true;
    await expect(waiting).rejects.toThrow("ECONNRESET");
    down = false;
    holding.open();
    await first;
    // A is alive and beating: only its ticket's age tells B that nobody waits behind it.
    await expect(a.alive(a.owner)).resolves.toBe(true);
    let done = false;
    const later = b.run(
      "blip",
      async () => {
        done = true;
      },
      3_000,
    );
    await vi.waitFor(() => expect(done).toBe(true), { timeout: 5_000 });
    await later;
    expect(skipped).toHaveBeenCalledWith(
      expect.objectContaining({ key: "blip", owner: a.owner }),
      expect.stringContaining("not refreshed"),
    );
    expect(await createState(store).listMembers("line:blip")).toEqual([]);
    await Promise.all([holder.close(), a.close(), b.close()]);
  });

  it("keeps a message's place in the line while it waits longer than a lease lives", async () => {
    stores = testStores(kind);
    const holder = createThreadLock(await stores.open(), { ttlMs: 300, renewEveryMs: 50, maxPollMs: 20 });
    // A polls slowly: were its ticket forgotten, B would take the lock first when it is let go.
    const a = createThreadLock(await stores.open(), { ttlMs: 300, renewEveryMs: 50, maxPollMs: 200 });
    const b = createThreadLock(await stores.open(), { ttlMs: 300, renewEveryMs: 50, maxPollMs: 20 });
    const order: string[] = [];
    const holding = gate();
    const started = gate();
    const first = holder.run(
      "long wait",
      async () => {
        started.open();
        await holding.passed;
      },
      1_000,
    );
    await started.passed;
    const sooner = a.run("long wait", async () => void order.push("a"), 2_000);
    await new Promise((r) => setTimeout(r, 50));
    const later = b.run("long wait", async () => void order.push("b"), 3_000);
    // Four lives of a lease.
    await new Promise((r) => setTimeout(r, 1_200));
    holding.open();
    await Promise.all([first, sooner, later]);
    expect(order).toEqual(["a", "b"]);
    await Promise.all([holder.close(), a.close(), b.close()]);
  });
});
