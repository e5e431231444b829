import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type Cut, TcpProxy } from "../../test/support/tcp-proxy.js";
import type { ModelEvent, Provider } from "../agent/providers/provider.js";
import { openStore, type Store } from "../store/index.js";
import { createThreadLock } from "../store/locks.js";
import { SessionRepository } from "../store/sessions.js";
import { needsServer, serverUrl, type TestStores, testStores } from "../store/testing.js";
import { INTERRUPTED_NOTE } from "./dispatcher.js";
import { aliceSays, fakeSlack, KEY, TakeoverBed } from "./takeover.test-helper.js";

const GRACE_MS = 500;
/** The README's promise: a stopping process exits at most 5 s after its grace (a second more for a loaded machine). */
const STOPPED_WITHIN_MS = GRACE_MS + 6_000;
/**
 * The drain's own limits with a turn whose last writes wait for the store, 9 s after the
 * grace: a second for each of its two questions to it, 5 s for the turns it stopped, a second
 * to take the beat out and one to close the store (and more for a loaded machine). The app
 * closes a store that does not answer at the end of the grace, so that it exits sooner
 * (test/e2e/stop-store-cut.test.ts).
 */
const DRAINED_WITHIN_MS = GRACE_MS + 12_000;

/** Writes half an answer, then waits until its turn is aborted. */
const halfAnAnswer: Provider = {
  name: "openai",
  listModels: async () => [],
  async *stream(_req, signal): AsyncIterable<ModelEvent> {
    yield { type: "text", delta: "Half an ans" };
    await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
  },
};

/** How long `work` took, or undefined when it had not settled after `ms`. */
async function timed(work: Promise<unknown>, ms: number): Promise<number | undefined> {
  const start = performance.now();
  const done = work.then(
    () => performance.now() - start,
    () => performance.now() - start,
  );
  return Promise.race([done, sleep(ms, undefined, { ref: false })]);
}

/**
 * A replica reaches Redis through a proxy that the test cuts, while the other replicas (and
 * the test) still reach it: its store stops answering it (a partition, a failover), and the
 * Redis client queues every command for a connection that does not come back.
 */
describe("a replica stopping on Redis", needsServer("redis"), () => {
  let bed: TakeoverBed;
  let stores: TestStores;
  let proxy: TcpProxy;
  /** The stopping replica's store, through the proxy. */
  let cutOff: Store;

  beforeEach(async () => {
    bed = await TakeoverBed.open();
    stores = testStores("redis");
    proxy = await TcpProxy.start(serverUrl("redis"));
    cutOff = await openStore(proxy.urlFor(serverUrl("redis")), { namespace: stores.namespace });
    const sessions = new SessionRepository(cutOff);
    // Titled already: no title is asked of the model after the half answer.
    await sessions.save({ ...(await sessions.getOrCreate(KEY)), title: "Titled" });
  });

  afterEach(async () => {
    proxy.restore();
    await cutOff.close().catch(() => undefined);
    await bed.close();
    await proxy.close();
    await stores.dispose();
  });

  /** A replica on the proxied store, beating, with half an answer written in Alice's thread. */
  async function answering() {
    const stopping = bed.setup(halfAnAnswer, {
      store: cutOff,
      lock: createThreadLock(cutOff),
      waiting: true,
    });
    const platform = fakeSlack();
    await stopping.dispatcher.recoverInterrupted([platform.adapter]);
    const handled = stopping.dispatcher.handle(aliceSays("e1", "a long question", platform.reply));
    await vi.waitFor(() => expect(platform.seen).toEqual(["Half an ans"]), { timeout: 5_000 });
    return { dispatcher: stopping.dispatcher, platform, handled };
  }

  it.each<Cut>(["silent", "refuse"])(
    "drains and closes its store within the drain's limits when its store is cut off mid-answer (%s)",
    async (cut) => {
      const { dispatcher, handled } = await answering();
      proxy.cutOff(cut);
      const took = await timed(
        dispatcher.drain(GRACE_MS).then(() => cutOff.close()),
        DRAINED_WITHIN_MS,
      );
      expect(took, "the drain and the store's close never ended").toBeDefined();
      await handled;
    },
  );

  it.each<Cut>(["silent", "refuse"])(
    "drains and closes its store within 5 s of its grace when its store is cut off with no turn running (%s)",
    async (cut) => {
      const stopping = bed.setup(halfAnAnswer, {
        store: cutOff,
        lock: createThreadLock(cutOff),
        waiting: true,
      });
      await stopping.dispatcher.recoverInterrupted([fakeSlack().adapter]);
      proxy.cutOff(cut);
      const took = await timed(
        stopping.dispatcher.drain(GRACE_MS).then(() => cutOff.close()),
        STOPPED_WITHIN_MS,
      );
      expect(took, "the drain and the store's close never ended").toBeDefined();
    },
  );

  it("with its store answering, ends its running answer with the restart note when no replica is left", async () => {
    const { dispatcher, platform, handled } = await answering();
    expect(await dispatcher.drain(GRACE_MS)).toEqual({ interrupted: 1, handedOver: 0 });
    await handled;
    expect(platform.seen).toEqual(["Half an ans", `<fail:${INTERRUPTED_NOTE}>`]);
    expect(await timed(cutOff.close(), 1_000)).toBeDefined();
  });

  it("with its store answering, hands its running answer to a live replica", async () => {
    const direct = await stores.open();
    const live = bed.setup(halfAnAnswer, { store: direct, lock: createThreadLock(direct) });
    // Beating, but never looking for turns to take over: what was handed stays in the store.
    await live.lock.others();
    const { dispatcher, platform, handled } = await answering();
    expect(await dispatcher.drain(GRACE_MS)).toEqual({ interrupted: 0, handedOver: 1 });
    await handled;
    expect(platform.seen).toEqual(["Half an ans", "<finish>"]);
    await live.lock.close();
  });

  it("rides out a blip of its store while running: what it sent meanwhile lands once the way is back", async () => {
    const { dispatcher, platform, handled } = await answering();
    proxy.cutOff("silent");
    await sleep(1_000);
    proxy.restore();
    // Its answer goes on (no silence was declared), and it ends at the stop as with no blip.
    expect(await dispatcher.drain(GRACE_MS)).toEqual({ interrupted: 1, handedOver: 0 });
    await handled;
    expect(platform.seen).toEqual(["Half an ans", `<fail:${INTERRUPTED_NOTE}>`]);
  });
});
