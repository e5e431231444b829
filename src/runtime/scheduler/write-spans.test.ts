import { afterEach, describe, expect, it } from "vitest";
import { useTracer } from "../../core/spans.js";
import { traceInMemory } from "../../ops/traced.test-helper.js";
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
