import { setImmediate as turnOfLoop } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { blockFor } from "../../test/support/event-loop.js";
import { say } from "../../test/support/scripted.js";
import type { ModelEvent } from "../agent/providers/provider.js";
import { createThreadLock } from "../store/locks.js";
import type { Adapter, Reply } from "./contract.js";
import { WriteScheduler } from "./scheduler/write-scheduler.js";
import { BEATS, model } from "./silence.test-helper.js";
import { StreamWriter } from "./stream.js";
import { aliceSays, TakeoverBed } from "./takeover.test-helper.js";

/*
 * A process whose event loop was held up for longer than its heartbeat's silence (a long
 * GC pause, a starved CPU): other replicas may count it gone and take its threads. Timers
 * that fell due meanwhile (an edit's pacing, the scheduler's next grant) run before the
 * one that declares the silence; no platform write of its turns may go out from them.
 */

/** Slack as one replica writes it: posts and edits in order, through the connection's write scheduler. */
function slack(timeline: string[]): { adapter: Adapter; reply: Reply } {
  const scheduler = new WriteScheduler({ limitOf: () => undefined }, "slack");
  let posted = 0;
  const reply: Reply = {
    status: async () => undefined,
    stream: () => {
      const writer = new StreamWriter(
        {
          post: async (text) => {
            timeline.push(`post:${text}`);
            return `m${++posted}`;
          },
          edit: async (_id, text) => void timeline.push(`edit:${text}`),
        },
        { limit: 4_000, intervalMs: 200, scheduler },
      );
      return {
        write: (d) => writer.write(d),
        finish: async () => {
          await writer.finish();
          timeline.push("<finish>");
        },
        fail: (m) => writer.fail(m),
        abandon: async () => {
          timeline.push("<abandon>");
          await writer.abandon();
        },
      };
    },
    upload: async () => undefined,
    title: async () => undefined,
    notice: async (t) => void timeline.push(`<notice:${t}>`),
  };
  const adapter: Adapter = {
    platform: "slack",
    start: async () => undefined,
    stop: async () => undefined,
    ready: () => true,
    replyFor: () => reply,
  };
  return { adapter, reply };
}

describe("a replica whose event loop stalled past its heartbeat's silence", () => {
  let bed: TakeoverBed;

  beforeEach(async () => {
    bed = await TakeoverBed.open();
  });

  afterEach(() => bed.close());

  it("writes nothing of its answer from the timers that fell due meanwhile: the turn stops first", async () => {
    const timeline: string[] = [];
    const posted = () => timeline.some((e) => e.startsWith("post:"));
    async function* stalls(signal: AbortSignal): AsyncIterable<ModelEvent> {
      yield { type: "text", delta: "Thinking. " };
      await vi.waitFor(() => expect(posted()).toBe(true));
      // Shown at the edit after the pacing wait, which is armed by the next turn of the loop.
      yield { type: "text", delta: "Still thinking. " };
      await turnOfLoop();
      blockFor(BEATS.silentAfterMs + 250);
      timeline.push("<stalled>");
      for (;;) {
        await turnOfLoop(undefined, { signal });
        yield { type: "text", delta: "more " };
      }
    }
    const provider = model(stalls, say("The whole answer."));
    const a = bed.setup(provider, { lock: createThreadLock(bed.store, { heartbeat: BEATS }) });
    const onA = slack(timeline);
    await a.dispatcher.recoverInterrupted([onA.adapter]);

    await a.dispatcher.handle(aliceSays("e1", "a question", onA.reply));
    const stalled = timeline.indexOf("<stalled>");
    expect(stalled).toBeGreaterThan(0);
    expect(timeline.slice(stalled + 1, stalled + 2)).toEqual(["<abandon>"]);
    // Its turn stays for the process that has the thread next: here this one, once its store answers.
    await vi.waitFor(() => expect(timeline.at(-1)).toBe("<finish>"), { timeout: 10_000 });
    await a.dispatcher.settled();
    expect(timeline).toEqual([
      "post:Thinking. ",
      "<stalled>",
      "<abandon>",
      "post:The whole answer.",
      "<finish>",
    ]);
  }, 20_000);
});
