import { afterEach, describe, expect, it } from "vitest";
import { useTracer } from "../../core/spans.js";
import { traceInMemory } from "../../ops/traced.test-helper.js";
import { RateLimitedError } from "../message-ops.js";
import { WriteScheduler } from "./write-scheduler.js";

afterEach(() => useTracer(undefined));

const traced = () => traceInMemory("writes");

describe("write spans", () => {
  it("names a granted write's span after the platform calls made in it", async () => {
    const spans = traced();
    const s = new WriteScheduler({ limitOf: () => undefined }, "slack");
    const call = (method: string) => {
      const ctx = s.callContext();
      expect(ctx?.granted).toBe(true);
      s.passedThrough(ctx!, method);
    };
    await s.run({
      lane: "first",
      buckets: [],
      what: "reply write",
      run: async () => call("chat.postMessage"),
    });
    await s.run({
      lane: "final",
      buckets: [],
      what: "reply write",
      run: async () => {
        call("files.getUploadURLExternal");
        call("files.completeUploadExternal");
      },
    });
    await s.run({ lane: "update", buckets: [], what: "reply write", run: async () => undefined });
    await s.run({ lane: "background", buckets: [], what: "reactions.add", run: async () => undefined });

    const sent = spans();
    expect(sent.map((x) => x.name)).toEqual([
      "slack chat.postMessage",
      "slack files.getUploadURLExternal",
      // No call made: the writer's own name stays.
      "slack reply write",
      "slack reactions.add",
    ]);
    expect(sent[0]?.attributes["switchboard.write.method"]).toBe("chat.postMessage");
    expect(sent[1]?.attributes["switchboard.write.calls"]).toEqual([
      "files.getUploadURLExternal",
      "files.completeUploadExternal",
    ]);
    expect(sent[2]?.attributes["switchboard.write.method"]).toBe("reply write");
  });

  it("counts the 429s a write met: those it waited out in line, and those its platform client waits out", async () => {
    const spans = traced();
    const s = new WriteScheduler({ limitOf: () => undefined }, "slack");
    let tries = 0;
    // Slack's client throws the 429 and the write waits in line for its pause, twice.
    await s.run({
      lane: "final",
      buckets: ["slack:update"],
      what: "chat.update",
      run: async () => {
        tries += 1;
        if (tries <= 2) throw new RateLimitedError(5);
      },
    });
    // discord.js waits out its own 429 and asks again as a new write: the refused one says so.
    await s.run({
      lane: "final",
      buckets: ["discord:channel:1"],
      what: "PATCH message",
      run: async () => s.callContext()?.refused?.(),
    });
    await s.run({ lane: "final", buckets: [], what: "reactions.add", run: async () => undefined });
    const limited = spans().map((x) => [x.name, x.attributes["switchboard.write.rate_limited"]]);
    expect(limited).toEqual([
      ["slack chat.update", 2],
      ["slack PATCH message", 1],
      ["slack reactions.add", 0],
    ]);
    expect(tries).toBe(3);
  });

  it("does nothing outside a traced write", async () => {
    const s = new WriteScheduler({ limitOf: () => undefined }, "slack");
    await s.run({
      lane: "first",
      buckets: [],
      run: async () => {
        const ctx = s.callContext()!;
        s.passedThrough(ctx, "chat.postMessage");
        expect(ctx.span).toBeUndefined();
      },
    });
  });
});
