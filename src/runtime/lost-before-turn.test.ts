import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { StoreLink } from "../../test/support/cut-off-store.js";
import { say } from "../../test/support/scripted.js";
import type { ModelEvent } from "../agent/providers/provider.js";
import { createThreadLock, type ThreadLock } from "../store/locks.js";
import { WaitingMessages } from "../store/waiting-messages.js";
import type { Reply } from "./contract.js";
import { currentFence, WriteFenced } from "./scheduler/write-fence.js";
import { BEATS, cutOffable, model, slackOf } from "./silence.test-helper.js";
import { aliceSays, KEY, TakeoverBed } from "./takeover.test-helper.js";

/*
 * A message that waited behind its thread's answer, kept in the store, whose lock is lost
 * in a store outage after it was taken and before its turn began: this process is alive,
 * so no other one adopts the kept copy, and the message must be answered here once the
 * store is back, once.
 */

/** `reply` as a write scheduler grants it: nothing is written once the turn's lock is not its own. */
function fenced(reply: Reply): Reply {
  const refused = () => currentFence()?.() === false;
  return {
    ...reply,
    stream: () => {
      const sink = reply.stream();
      return {
        ...sink,
        write: (d) => {
          if (!refused()) sink.write(d);
        },
        finish: async (how) => {
          if (refused()) throw new WriteFenced("the answer");
          await sink.finish(how);
        },
        fail: async (m) => {
          if (refused()) throw new WriteFenced("the note");
          await sink.fail(m);
        },
      };
    },
  };
}

describe("a waiting message whose thread's lock is lost before its turn begins", () => {
  let bed: TakeoverBed;
  let waiting: WaitingMessages;
  let onlooker: ThreadLock;
  const links: StoreLink[] = [];

  beforeEach(async () => {
    bed = await TakeoverBed.open();
    waiting = new WaitingMessages(bed.store, bed.ledger);
    onlooker = createThreadLock(bed.store);
  });

  afterEach(async () => {
    for (const link of links.splice(0)) link.restore();
    await onlooker.close();
    await bed.close();
  });

  /**
   * A replica whose first message's answer waits for `release`, with a second message kept
   * behind it; its store falls silent as the second one's turn begins (it reads the
   * thread's record first).
   */
  async function secondCutAtItsTurn(timeline: string[], then: ModelEvent[][] = []) {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const provider = model(
      async function* (): AsyncIterable<ModelEvent> {
        await gate;
        yield* say("Answer to one.");
      },
      ...then,
    );
    const a = cutOffable(bed, links, provider, { waiting: true });
    const onA = slackOf("A", timeline);
    await a.dispatcher.recoverInterrupted([onA.adapter]);
    const first = a.dispatcher.handle(aliceSays("e1", "one", fenced(onA.reply)));
    await vi.waitFor(() => expect(provider.requests).toHaveLength(1), { timeout: 5_000 });
    const second = a.dispatcher.handle(aliceSays("e2", "two", fenced(onA.reply)));
    // Kept at once: it waits behind a turn of its own process.
    await vi.waitFor(async () => expect(await waiting.threads()).toEqual([KEY]), { timeout: 5_000 });
    const get = a.ledger.get.bind(a.ledger);
    let armed = true;
    vi.spyOn(a.ledger, "get").mockImplementation((key) => {
      if (armed && key === KEY) {
        armed = false;
        a.link.cutOff();
      }
      return get(key);
    });
    release();
    await first;
    await vi.waitFor(() => expect(a.link.cut).toBe(true), { timeout: 5_000 });
    // Out longer than its heartbeat lives: the lock is lost, and the others count this process gone.
    await vi.waitFor(async () => expect(await onlooker.alive(a.lock.owner)).toBe(false), { timeout: 10_000 });
    return { a, provider, second };
  }

  it("is answered here once the store is back, once, and its kept copy is gone", async () => {
    const timeline: string[] = [];
    const { a, provider, second } = await secondCutAtItsTurn(timeline, [say("Answer to two.")]);
    a.link.restore();
    await second;
    await vi.waitFor(() => expect(timeline).toContain("A: Answer to two."), { timeout: 15_000 });
    await a.dispatcher.settled();

    expect(timeline).toEqual(["A: Answer to one.", "A: <finish>", "A: Answer to two.", "A: <finish>"]);
    expect(provider.requests).toHaveLength(2);
    await vi.waitFor(async () => expect(await waiting.threads()).toEqual([]), { timeout: 5_000 });
    expect(await bed.ledger.pending()).toEqual([]);
    expect(await bed.ledger.handedThreads()).toEqual([]);
  }, 30_000);

  it("adopted meanwhile by a replica that counted this process gone, is answered there alone", async () => {
    const timeline: string[] = [];
    const b = bed.setup(model(say("Answer to two.")), {
      lock: createThreadLock(bed.store, { heartbeat: BEATS }),
      waiting: true,
    });
    await b.dispatcher.recoverInterrupted([slackOf("B", timeline).adapter]);
    const { a, provider, second } = await secondCutAtItsTurn(timeline);
    await vi.waitFor(() => expect(timeline).toContain("B: <finish>"), { timeout: 15_000 });
    a.link.restore();
    await second;
    await Promise.all([a.dispatcher.settled(), b.dispatcher.settled()]);

    expect(timeline).toEqual([
      "A: Answer to one.",
      "A: <finish>",
      'B: <takes the reply over from "">',
      "B: Answer to two.",
      "B: <finish>",
    ]);
    expect(provider.requests).toHaveLength(1);
    await vi.waitFor(async () => expect(await waiting.threads()).toEqual([]), { timeout: 5_000 });
    expect(await bed.ledger.pending()).toEqual([]);
  }, 30_000);
});
