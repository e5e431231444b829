import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ScriptedProvider, say } from "../../test/support/scripted.js";
import { log } from "../log.js";
import { createThreadLock } from "../store/locks.js";
import { createState } from "../store/state.js";
import { TurnLedger } from "../store/turns.js";
import { UsageLedger } from "../store/usage.js";
import type { Adapter, Question } from "./contract.js";
import { slackOf } from "./silence.test-helper.js";
import { ALICE, aliceSays, approve, byText, KEY, TakeoverBed } from "./takeover.test-helper.js";
import { MAX_TAKEOVERS } from "./turn.js";

/*
 * Every write of a turn's record a process makes under the thread's lock is fenced by that
 * lock's lease, the first one of each path too: a write that lands after the lock was lost
 * (the process stalled, or its client sent what it had queued while reconnecting) must not
 * replace, or end, the record of the process that has the thread by then.
 */

type Write = "takeOver" | "unpark" | "recoverFailed" | "end" | "begin";

describe("a turn record's first write on each path, landing after the thread was taken", () => {
  let bed: TakeoverBed;
  /** The process that takes the thread, as it writes its own turn's record. */
  let taker: TurnLedger;

  beforeEach(async () => {
    bed = await TakeoverBed.open();
    taker = new TurnLedger(bed.store);
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    await bed.close();
  });

  /** Another process takes the thread (as from one it saw stop beating) and begins its turn there. */
  async function takeThread(): Promise<void> {
    const state = createState(bed.store);
    const held = await state.lockHolder(KEY);
    expect(held).toBeDefined();
    await state.releaseLock(held!);
    const lease = (await state.acquireLock(KEY, 30_000, "taker"))!;
    const input = { text: "the taker's question", user: ALICE, channel: "C1" };
    await taker.begin(KEY, { id: "taker-turn", owner: "taker", input }, lease);
  }

  /** The next `write` of `ledger` lands only after the thread was taken. */
  function lateNext(ledger: TurnLedger, write: Write): Promise<void> {
    const original = ledger[write].bind(ledger) as (...args: unknown[]) => Promise<unknown>;
    return new Promise((reached) => {
      vi.spyOn(ledger, write).mockImplementationOnce((async (...args: unknown[]) => {
        await takeThread();
        try {
          return await original(...args);
        } finally {
          reached();
        }
      }) as never);
    });
  }

  async function expectTakersRecord(): Promise<void> {
    expect(await bed.ledger.get(KEY)).toMatchObject({ id: "taker-turn", owner: "taker" });
  }

  /** A Slack whose restart note is written (or fails), for turns past their takeovers. */
  function noting(fails: boolean): Adapter {
    return {
      ...slackOf("A", []).adapter,
      recover: async () => {
        if (fails) throw new Error("Slack answered 503");
      },
    };
  }

  it("takeOver: a turn whose process died, taken over", async () => {
    await bed.leftBy("a-process-that-died", { address: { messages: ["1712345679.000200"] } });
    const a = bed.setup(new ScriptedProvider([say("Never shown.")]), { lock: createThreadLock(bed.store) });
    vi.spyOn(log, "error").mockReturnValue(undefined);
    const late = lateNext(bed.ledger, "takeOver");
    await a.dispatcher.recoverInterrupted([slackOf("A", []).adapter]);
    await late;
    await a.dispatcher.settled();
    await expectTakersRecord();
  });

  it("unpark: a parked turn going on once its approval is decided", async () => {
    const questions: Question[] = [];
    const onA = slackOf("A", [], questions);
    const a = bed.setup(byText, { asks: true, lock: createThreadLock(bed.store) });
    await a.dispatcher.recoverInterrupted([onA.adapter]);
    await a.dispatcher.handle(aliceSays("e1", "write a.txt", onA.reply));
    expect(questions).toHaveLength(1);
    vi.spyOn(log, "error").mockReturnValue(undefined);
    const late = lateNext(bed.ledger, "unpark");
    await a.dispatcher.interact(approve(questions[0]!, "q1"));
    await late;
    await a.dispatcher.settled();
    await expectTakersRecord();
    expect(a.hub.calls).toEqual([]);
  });

  it.each([
    ["recoverFailed", true],
    ["end", false],
  ] as const)("%s: a turn past its takeovers, ended with the restart note", async (write, fails) => {
    await bed.leftBy("a-process-that-died", { takeovers: MAX_TAKEOVERS });
    const a = bed.setup(new ScriptedProvider([say("Never asked.")]), { lock: createThreadLock(bed.store) });
    vi.spyOn(log, "error").mockReturnValue(undefined);
    const late = lateNext(bed.ledger, write);
    await a.dispatcher.recoverInterrupted([noting(fails)]);
    await late;
    await a.dispatcher.settled();
    await expectTakersRecord();
  });

  it("begin: a handed message's turn, its message handed back when its record is refused", async () => {
    const a = bed.setup(byText, { lock: createThreadLock(bed.store) });
    const handedAway = { text: "a handed question", user: ALICE, channel: "C1" };
    await bed.ledger.hand(KEY, handedAway);
    vi.spyOn(log, "error").mockReturnValue(undefined);
    const late = lateNext(bed.ledger, "begin");
    await a.dispatcher.recoverInterrupted([slackOf("A", []).adapter]);
    await late;
    await a.dispatcher.settled();
    await expectTakersRecord();
    expect(await bed.ledger.takeHanded(KEY)).toEqual([handedAway]);
  }, 15_000);

  it("end: a handed message refused by its sender's daily budget", async () => {
    const a = bed.setup(byText, {
      lock: createThreadLock(bed.store),
      usage: { budgets: { perUser: { tokens: 100 } } },
    });
    const payer = { platform: "slack" as const, user: ALICE.id, channel: "C1", key: KEY };
    await new UsageLedger(bed.store).record({
      ...payer,
      model: "m",
      inputTokens: 150,
      outputTokens: 0,
      cost: 0,
    });
    await bed.ledger.hand(KEY, { text: "one more question", user: ALICE, channel: "C1" });
    vi.spyOn(log, "error").mockReturnValue(undefined);
    const late = lateNext(bed.ledger, "end");
    await a.dispatcher.recoverInterrupted([slackOf("A", []).adapter]);
    await late;
    await a.dispatcher.settled();
    await expectTakersRecord();
  }, 15_000);
});
