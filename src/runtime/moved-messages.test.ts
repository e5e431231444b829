import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { StoreLink } from "../../test/support/cut-off-store.js";
import { say } from "../../test/support/scripted.js";
import { createThreadLock } from "../store/locks.js";
import type { TurnInput } from "../store/turns.js";
import { WaitingMessages } from "../store/waiting-messages.js";
import { recordHanded } from "./handed-turns.js";
import { BEATS, cutOffable, model, slackOf } from "./silence.test-helper.js";
import { ALICE, aliceSays, fakeSlack, KEY, TakeoverBed } from "./takeover.test-helper.js";

/*
 * A message owed an answer moves from where it waited (kept, or handed over) into its
 * turn's record. A process that dies in between (here: cut off from the store for good,
 * as a kill -9 would leave it) must leave it where another process finds it, and only once.
 */

describe("a message moving into its turn's record when its process dies", () => {
  let bed: TakeoverBed;
  const links: StoreLink[] = [];

  beforeEach(async () => {
    bed = await TakeoverBed.open();
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    for (const link of links.splice(0)) link.restore();
    await bed.close();
  });

  /**
   * Replica A answers "one" and keeps "two", which waits behind it; A dies at `dieAt` of
   * the second turn's start. Replica B, on the same store, is to answer "two", once.
   */
  async function diesStartingTheSecond(dieAt: (a: ReturnType<typeof cutOffable>) => void) {
    const timeline: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const aModel = model(
      async function* () {
        await gate;
        yield* say("Answer to one.");
      },
      // Dead by now: whatever it would say never reaches the thread.
      async function* (signal) {
        await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
      },
    );
    const a = cutOffable(bed, links, aModel, { waiting: true });
    const onA = slackOf("A", timeline);
    await a.dispatcher.recoverInterrupted([onA.adapter]);
    const bModel = model(say("Answer to two."));
    const b = bed.setup(bModel, { lock: createThreadLock(bed.store, { heartbeat: BEATS }), waiting: true });
    await b.dispatcher.recoverInterrupted([slackOf("B", timeline).adapter]);
    const waiting = new WaitingMessages(bed.store, bed.ledger);

    void a.dispatcher.handle(aliceSays("e1", "one", onA.reply));
    await vi.waitFor(() => expect(aModel.requests).toHaveLength(1), { timeout: 5_000 });
    void a.dispatcher.handle({ ...aliceSays("e2", "two", onA.reply), sentAt: Date.now() });
    await vi.waitFor(async () => expect(await waiting.threads()).toEqual([KEY]), { timeout: 5_000 });
    dieAt(a);
    release();
    await vi.waitFor(() => expect(a.link.cut).toBe(true), { timeout: 5_000 });
    await vi.waitFor(() => expect(timeline).toContain("B: <finish>"), { timeout: 15_000 });
    await b.dispatcher.settled();

    const asked = bModel.requests.map((r) => r.messages.at(-1)?.content);
    expect(asked).toEqual(["two"]);
    expect(timeline.filter((e) => e.startsWith("B:") && e.includes("Answer"))).toEqual(["B: Answer to two."]);
    expect(timeline.filter((e) => e.includes("Answer to two") && e.startsWith("A:"))).toEqual([]);
    expect(await waiting.threads()).toEqual([]);
    expect(await bed.ledger.pending()).toEqual([]);
    expect((await bed.ledger.handedIn(KEY)).messages).toEqual([]);
  }

  it("is answered once when it dies right after the turn's record is written", async () => {
    await diesStartingTheSecond((a) => {
      const opened = a.ledger.opened.bind(a.ledger);
      let records = 0;
      vi.spyOn(a.ledger, "opened").mockImplementation((record) => {
        const written = opened(record);
        if (record.input?.text !== "two" || records++ > 0) return written;
        return written.then(() => a.link.cutOff());
      });
    });
  }, 30_000);

  it("is answered once when it dies right after the kept copy is taken away", async () => {
    await diesStartingTheSecond((a) => {
      const forget = WaitingMessages.prototype.forget;
      vi.spyOn(WaitingMessages.prototype, "forget").mockImplementation(async function (
        this: WaitingMessages,
        ...args
      ) {
        const took = await forget.apply(this, args);
        if (args[0].owner === a.lock.owner) a.link.cutOff();
        return took;
      });
    });
  }, 30_000);

  it("hands the thread's handed messages on once when a record carries them and they were not yet taken away", async () => {
    const input = (text: string, sentAt: number): TurnInput => ({
      text,
      user: { id: "U1" },
      channel: "C1",
      sentAt,
    });
    await bed.ledger.hand(KEY, input("first", 1), "h1");
    await bed.ledger.hand(KEY, input("second", 2), "h2");
    // What a process that died right after writing the record left: the record and both copies.
    const handedIn = bed.ledger.handedIn.bind(bed.ledger);
    const dropped = vi.spyOn(bed.ledger, "dropHanded").mockRejectedValueOnce(new Error("killed"));
    await expect(recordHanded(bed.ledger, KEY, "a-process-gone", undefined)).rejects.toThrow("killed");
    dropped.mockRestore();
    expect((await handedIn(KEY)).messages.map((m) => m.text)).toEqual(["first", "second"]);

    const timeline: string[] = [];
    const bModel = model(say("Answer to first."), say("Answer to second."));
    const b = bed.setup(bModel, { lock: createThreadLock(bed.store, { heartbeat: BEATS }), waiting: true });
    await b.dispatcher.recoverInterrupted([slackOf("B", timeline).adapter]);
    await vi.waitFor(() => expect(bModel.requests).toHaveLength(2), { timeout: 10_000 });
    await vi.waitFor(async () => expect(await bed.ledger.pending()).toEqual([]), { timeout: 10_000 });
    await b.dispatcher.settled();
    // Three seconds more: two rounds of the watch, which would find a copy left over.
    await new Promise((r) => setTimeout(r, 3_000));
    await b.dispatcher.settled();
    expect(bModel.requests.map((r) => r.messages.at(-1)?.content)).toEqual(["first", "second"]);
    expect((await bed.ledger.handedIn(KEY)).messages).toEqual([]);
  }, 30_000);
});

describe("the mark a process that stopped left on a message it took (Slack's :eyes:)", () => {
  let bed: TakeoverBed;
  const MARK = "C1:1712345678.000300";

  beforeEach(async () => {
    bed = await TakeoverBed.open();
  });

  afterEach(() => bed.close());

  it("is taken away by the process that finishes the message's turn", async () => {
    await bed.leftBy("a-process-that-died", {
      input: { text: "write the file, then read it", user: ALICE, channel: "C1", mark: MARK },
    });
    const { dispatcher } = bed.setup(model(say("Done.")));
    const slack = fakeSlack();
    expect(await dispatcher.recoverInterrupted([slack.adapter])).toBe(1);
    await vi.waitFor(() => expect(slack.marks).toEqual([MARK]));
    expect(slack.seen).toEqual(["Done.", "<finish>"]);
  });

  it("is taken away by the process that answers a handed message", async () => {
    await bed.ledger.hand(KEY, { text: "one", user: ALICE, channel: "C1", mark: MARK });
    const { dispatcher } = bed.setup(model(say("Answer to one.")));
    const slack = fakeSlack();
    await dispatcher.recoverInterrupted([slack.adapter]);
    await vi.waitFor(() => expect(slack.seen).toContain("<finish>"), { timeout: 5_000 });
    await vi.waitFor(() => expect(slack.marks).toEqual([MARK]));
  });

  it("is taken away by its own process when it goes on with a turn it dropped (its handler left the mark)", async () => {
    const { dispatcher, lock } = bed.setup(model(say("Done.")));
    await bed.leftBy(lock.owner, {
      input: { text: "write the file, then read it", user: ALICE, channel: "C1", mark: MARK },
    });
    const slack = fakeSlack();
    expect(await dispatcher.recoverInterrupted([slack.adapter])).toBe(1);
    expect(slack.seen).toEqual(["Done.", "<finish>"]);
    await vi.waitFor(() => expect(slack.marks).toEqual([MARK]));
  });
});
