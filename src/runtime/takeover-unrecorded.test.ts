import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { StoreLink } from "../../test/support/cut-off-store.js";
import { say } from "../../test/support/scripted.js";
import { createThreadLock } from "../store/locks.js";
import type { TurnRun } from "../store/turns.js";
import type { Question } from "./contract.js";
import { BEATS, cutOffable, model, slackOf } from "./silence.test-helper.js";
import { aliceSays, approve, byText, KEY, TakeoverBed } from "./takeover.test-helper.js";

/*
 * A turn's record is written while the model is asked (`TurnLedger.open`). A replica cut off
 * from its store just then stops the turn before its record is known to be stored: its
 * message was taken from the queue and a redelivery is a duplicate, so it must be answered
 * from the store, once, whether the record's write failed, was refused, or landed late.
 */

describe("a turn stopped by its store's silence before its record was stored", () => {
  let bed: TakeoverBed;
  const links: StoreLink[] = [];

  beforeEach(async () => {
    bed = await TakeoverBed.open();
  });

  afterEach(async () => {
    for (const link of links.splice(0)) link.restore();
    await bed.close();
  });

  /** The replica's store falls silent as its next turn's record is about to be written. */
  function cutAtNextRecord(replica: ReturnType<typeof cutOffable>): void {
    const open = replica.ledger.open.bind(replica.ledger);
    vi.spyOn(replica.ledger, "open").mockImplementationOnce((key: string, run?: TurnRun, ...rest) => {
      replica.link.cutOff();
      return open(key, run, ...rest);
    });
  }

  it("is answered once the store is back, in a reply of its own: the message is not lost", async () => {
    const timeline: string[] = [];
    const provider = model(say("Never shown."), say("It says hi."));
    const a = cutOffable(bed, links, provider);
    const onA = slackOf("A", timeline);
    await a.dispatcher.recoverInterrupted([onA.adapter]);
    cutAtNextRecord(a);
    const handled = a.dispatcher.handle(aliceSays("e1", "what does a.txt say?", onA.reply));
    await vi.waitFor(() => expect(timeline).toContain("A: <abandon>"), { timeout: 10_000 });

    a.link.restore();
    await handled;
    await vi.waitFor(() => expect(timeline.at(-1)).toBe("A: <finish>"), { timeout: 15_000 });
    await a.dispatcher.settled();

    expect(timeline).toEqual([
      "A: <abandon>",
      'A: <takes the reply over from "">',
      "A: It says hi.",
      "A: <finish>",
    ]);
    const session = await bed.sessions.get(KEY);
    expect(session?.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "what does a.txt say?"],
      ["assistant", "It says hi."],
    ]);
    expect(await bed.ledger.pending()).toEqual([]);
    expect(await bed.ledger.handedThreads()).toEqual([]);
  }, 30_000);

  it("whose record landed late is answered once, by the takeover of that record, and not handed over too", async () => {
    const timeline: string[] = [];
    const provider = model(say("Never shown."), say("It says hi."));
    const a = cutOffable(bed, links, provider, { late: true });
    const onA = slackOf("A", timeline);
    await a.dispatcher.recoverInterrupted([onA.adapter]);
    cutAtNextRecord(a);
    const handled = a.dispatcher.handle(aliceSays("e1", "what does a.txt say?", onA.reply));
    await vi.waitFor(() => expect(timeline).toContain("A: <abandon>"), { timeout: 10_000 });

    a.link.restore();
    await handled;
    await vi.waitFor(() => expect(timeline.at(-1)).toBe("A: <finish>"), { timeout: 15_000 });
    await a.dispatcher.settled();

    expect(timeline.filter((e) => e.includes("<takes the reply over"))).toHaveLength(1);
    expect(timeline.filter((e) => e === "A: It says hi.")).toHaveLength(1);
    const session = await bed.sessions.get(KEY);
    expect(session?.messages.filter((m) => m.role === "user")).toHaveLength(1);
    expect(await bed.ledger.pending()).toEqual([]);
    expect(await bed.ledger.handedThreads()).toEqual([]);
  }, 30_000);

  it("never replaces, once it lands late, the record of a turn the replica that took the thread parked: Approve goes on with that turn", async () => {
    const timeline: string[] = [];
    const questions: Question[] = [];
    const a = cutOffable(bed, links, byText, { late: true });
    const b = bed.setup(byText, { asks: true, lock: createThreadLock(bed.store, { heartbeat: BEATS }) });
    const onA = slackOf("A", timeline);
    const onB = slackOf("B", timeline, questions);
    await a.dispatcher.recoverInterrupted([onA.adapter]);
    await b.dispatcher.recoverInterrupted([onB.adapter]);
    cutAtNextRecord(a);
    const handled = a.dispatcher.handle(aliceSays("e1", "a question", onA.reply));
    await vi.waitFor(() => expect(timeline).toContain("A: <abandon>"), { timeout: 10_000 });

    // B takes the thread for Alice's next message (A no longer beats) and parks it on a question.
    await b.dispatcher.handle(aliceSays("e2", "write a.txt", onB.reply));
    expect(questions).toHaveLength(1);
    const parked = await bed.ledger.get(KEY);
    expect(parked).toMatchObject({ owner: b.lock.owner, waiting: { channel: "C1" } });

    // A reconnects: the writes it queued while cut off reach the store now.
    a.link.restore();
    await handled;
    expect(await bed.ledger.get(KEY)).toEqual(parked);

    await b.dispatcher.interact(approve(questions[0]!, "q1"));
    await vi.waitFor(() => expect(timeline).toContain("B: Written."), { timeout: 10_000 });
    // A's message, whose record never landed, is answered once B's turn has ended.
    await vi.waitFor(
      () => expect(timeline.filter((e) => e.endsWith("You asked: a question"))).toHaveLength(1),
      {
        timeout: 15_000,
      },
    );
    await Promise.all([a.dispatcher.settled(), b.dispatcher.settled()]);
    expect(b.hub.calls.map((c) => c.name)).toEqual(["fs__write"]);
    const session = await bed.sessions.get(KEY);
    expect(session?.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
      "write a.txt",
      "a question",
    ]);
    expect(await bed.ledger.pending()).toEqual([]);
    expect(await bed.ledger.handedThreads()).toEqual([]);
  }, 30_000);
});
