import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { StoreLink } from "../../test/support/cut-off-store.js";
import { say } from "../../test/support/scripted.js";
import type { Provider } from "../agent/providers/provider.js";
import { createThreadLock } from "../store/locks.js";
import {
  BEATS,
  endless,
  lookFirst,
  model,
  nextWatch,
  cutOffable as onLink,
  slackOf,
} from "./silence.test-helper.js";
import { aliceSays, KEY, TakeoverBed } from "./takeover.test-helper.js";
import { MAX_TAKEOVERS } from "./turn.js";

/*
 * A replica cut off from the store while it still reaches the platform: it must stop
 * writing its answers before another replica may take them over, and finish them itself
 * when the store answers again and nobody else did.
 */

describe("a replica the store stops answering", () => {
  let bed: TakeoverBed;
  const links: StoreLink[] = [];

  beforeEach(async () => {
    bed = await TakeoverBed.open();
  });

  afterEach(async () => {
    for (const link of links.splice(0)) link.restore();
    await bed.close();
  });

  /** A replica whose every store call goes through a link of its own. */
  const cutOffable = (provider: Provider) => onLink(bed, links, provider);

  it("stops writing its answer before the other replica takes the turn over, and leaves it to that one once the store is back", async () => {
    const timeline: string[] = [];
    const a = cutOffable(model(endless));
    let answer!: () => void;
    const answering = new Promise<void>((r) => {
      answer = r;
    });
    let takerAsked = false;
    const b = bed.setup(
      model(async function* () {
        takerAsked = true;
        await answering;
        yield* say("The whole answer.");
      }),
      { lock: createThreadLock(bed.store, { heartbeat: BEATS }) },
    );
    const onA = slackOf("A", timeline);
    await a.dispatcher.recoverInterrupted([onA.adapter]);
    await b.dispatcher.recoverInterrupted([slackOf("B", timeline).adapter]);
    const watchedByA = vi.spyOn(a.ledger, "listed");
    const aliveForA = vi.spyOn(a.lock, "alive");
    const handled = a.dispatcher.handle(aliceSays("e1", "a long question", onA.reply));
    await vi.waitFor(() => expect(timeline).toContain("A: word3 "), { timeout: 5_000 });

    a.link.cutOff();
    const takesOver = (e: string) => e.startsWith("B: <takes the reply over");
    await vi.waitFor(() => expect(timeline.some(takesOver)).toBe(true), { timeout: 15_000 });
    const takeover = timeline.findIndex(takesOver);
    expect(timeline.slice(0, takeover)).toContain("A: <abandon>");
    expect(timeline.slice(takeover).filter((e) => e.startsWith("A:"))).toEqual([]);
    await vi.waitFor(() => expect(takerAsked).toBe(true), { timeout: 5_000 });

    // The store answers A again while B is still writing the answer it took over.
    a.link.restore();
    await handled;
    await nextWatch(watchedByA);
    await vi.waitFor(() => expect(aliveForA).toHaveBeenCalledWith(b.lock.owner), { timeout: 5_000 });
    await Promise.allSettled(aliveForA.mock.results.map((r) => r.value));
    expect(a.lock.queued(KEY)).toBe(0);
    answer();
    await vi.waitFor(() => expect(timeline.at(-1)).toBe("B: <finish>"), { timeout: 5_000 });
    await Promise.all([a.dispatcher.settled(), b.dispatcher.settled()]);

    expect(timeline.slice(takeover)).toEqual([
      'B: <takes the reply over from "">',
      "B: The whole answer.",
      "B: <finish>",
    ]);
    const session = await bed.sessions.get(KEY);
    expect(session?.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "a long question"],
      ["assistant", "The whole answer."],
    ]);
    expect(await bed.ledger.pending()).toEqual([]);
  }, 30_000);

  it("a turn running here while its watcher looks over the pending turns is not taken for one it dropped", async () => {
    const timeline: string[] = [];
    let answer!: () => void;
    const answering = new Promise<void>((r) => {
      answer = r;
    });
    const provider = model(async function* () {
      yield { type: "text", delta: "Thinking. " };
      await answering;
      yield* say("Done.");
    });
    const a = cutOffable(provider);
    const onA = slackOf("A", timeline);
    await a.dispatcher.recoverInterrupted([onA.adapter]);
    const watched = vi.spyOn(a.ledger, "listed");
    const handled = a.dispatcher.handle(aliceSays("e1", "a question", onA.reply));
    await vi.waitFor(async () => expect(await bed.ledger.get(KEY)).toMatchObject({ owner: a.lock.owner }));

    // Its record names this process, as a dropped one would.
    await nextWatch(watched);
    answer();
    await handled;
    await a.dispatcher.settled();

    expect(timeline).toEqual(["A: Thinking. ", "A: Done.", "A: <finish>"]);
    expect(provider.requests).toHaveLength(1);
    expect(await bed.ledger.pending()).toEqual([]);
  }, 30_000);

  it("alone, with its store gone for longer than a heartbeat lives, finishes its cut-off answer from the checkpoint once the store is back, once", async () => {
    const timeline: string[] = [];
    const provider = model(lookFirst, endless, say("It says hi."));
    const a = cutOffable(provider);
    const onA = slackOf("A", timeline);
    await a.dispatcher.recoverInterrupted([onA.adapter]);
    const handled = a.dispatcher.handle(aliceSays("e1", "what does a.txt say?", onA.reply));
    // Past the tool step's checkpoint, writing the next one.
    await vi.waitFor(() => expect(timeline).toContain("A: word2 "), { timeout: 5_000 });

    a.link.cutOff();
    await vi.waitFor(() => expect(timeline).toContain("A: <abandon>"), { timeout: 10_000 });
    // Out longer than a beat lives: to the store, this process is gone as well.
    const onlooker = createThreadLock(bed.store);
    await vi.waitFor(async () => expect(await onlooker.alive(a.lock.owner)).toBe(false), { timeout: 10_000 });
    expect(await bed.ledger.get(KEY)).toMatchObject({ owner: a.lock.owner, shown: "Let me look." });
    const stopped = timeline.length;
    a.link.restore();
    await handled;
    await vi.waitFor(() => expect(timeline.at(-1)).toBe("A: <finish>"), { timeout: 15_000 });
    await a.dispatcher.settled();

    expect(timeline.slice(stopped - 1)).toEqual([
      "A: <abandon>",
      'A: <takes the reply over from "Let me look.">',
      "A: \n\nIt says hi.",
      "A: <finish>",
    ]);
    expect(provider.requests).toHaveLength(3);
    const session = await bed.sessions.get(KEY);
    expect(session?.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(await bed.ledger.pending()).toEqual([]);
  }, 30_000);

  it("cut off again and again, goes on with its own answer each time the store is back: no restart note, since no process died", async () => {
    const timeline: string[] = [];
    // One more cut-off than the takeovers a turn whose processes die is allowed.
    const cuts = MAX_TAKEOVERS + 1;
    const provider = model(lookFirst, ...Array.from({ length: cuts }, () => endless), say("It says hi."));
    const a = cutOffable(provider);
    const onA = slackOf("A", timeline);
    await a.dispatcher.recoverInterrupted([onA.adapter]);
    const count = (what: string) => timeline.filter((e) => e.includes(what)).length;
    const handled = a.dispatcher.handle(aliceSays("e1", "what does a.txt say?", onA.reply));
    for (let cut = 1; cut <= cuts; cut++) {
      // Writing the step after the checkpoint (again).
      const before = timeline.length;
      await vi.waitFor(() => expect(timeline.slice(before).some((e) => e.startsWith("A: word"))).toBe(true), {
        timeout: 10_000,
      });
      a.link.cutOff();
      await vi.waitFor(() => expect(count("<abandon>")).toBe(cut), { timeout: 10_000 });
      a.link.restore();
      await vi.waitFor(() => expect(count("<takes the reply over") + count("<recover:")).toBe(cut), {
        timeout: 15_000,
      });
    }
    await handled;
    await vi.waitFor(() => expect(timeline.at(-1)).toBe("A: <finish>"), { timeout: 15_000 });
    await a.dispatcher.settled();

    expect(timeline.filter((e) => e.includes("<recover:"))).toEqual([]);
    expect(timeline.slice(-2)).toEqual(["A: \n\nIt says hi.", "A: <finish>"]);
    expect(provider.requests).toHaveLength(cuts + 2);
    expect(await bed.ledger.pending()).toEqual([]);
  }, 60_000);

  it("both replicas cut off: once the store answers again, the cut-off answer is finished by one of them, once", async () => {
    const timeline: string[] = [];
    const first = model(lookFirst, endless, say("It says hi."));
    const second = model(say("It says hi."));
    const a = cutOffable(first);
    const b = cutOffable(second);
    const onA = slackOf("A", timeline);
    await a.dispatcher.recoverInterrupted([onA.adapter]);
    await b.dispatcher.recoverInterrupted([slackOf("B", timeline).adapter]);
    const handled = a.dispatcher.handle(aliceSays("e1", "what does a.txt say?", onA.reply));
    await vi.waitFor(() => expect(timeline).toContain("A: word2 "), { timeout: 5_000 });

    a.link.cutOff();
    b.link.cutOff();
    await vi.waitFor(() => expect(timeline).toContain("A: <abandon>"), { timeout: 10_000 });
    const onlooker = createThreadLock(bed.store);
    await vi.waitFor(async () => expect(await onlooker.alive(a.lock.owner)).toBe(false), { timeout: 10_000 });
    a.link.restore();
    b.link.restore();
    await handled;
    await vi.waitFor(() => expect(timeline.filter((e) => e.endsWith("<finish>"))).toHaveLength(1), {
      timeout: 15_000,
    });
    await vi.waitFor(async () => expect(await bed.ledger.pending()).toEqual([]), { timeout: 5_000 });
    await Promise.all([a.dispatcher.settled(), b.dispatcher.settled()]);

    expect(timeline.filter((e) => e.endsWith("<finish>"))).toHaveLength(1);
    expect(timeline.filter((e) => e.endsWith("It says hi."))).toHaveLength(1);
    expect(timeline.filter((e) => e.includes("<takes the reply over"))).toHaveLength(1);
    expect(first.requests.length + second.requests.length).toBe(3);
    const session = await bed.sessions.get(KEY);
    expect(session?.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
  }, 30_000);
});
