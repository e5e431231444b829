import { afterEach, describe, expect, it } from "vitest";
import { useTracer } from "../../core/spans.js";
import { traceInMemory } from "../../ops/traced.test-helper.js";
import { tracedCall } from "../../ops/traced-provider.js";
import type { ModelEvent, ModelRequest, Provider } from "./provider.js";
import { type StreamTap, tapProvider } from "./tap.js";

afterEach(() => useTracer(undefined));

const REQ: ModelRequest = { model: "gpt-4o-mini", system: "", messages: [], tools: [] };
const EVENTS: ModelEvent[] = [
  { type: "text", delta: "Hel" },
  { type: "text", delta: "lo" },
  { type: "usage", usage: { inputTokens: 12, outputTokens: 3 } },
  { type: "stop", reason: "end" },
];

/** A provider streaming `events`, then failing with `error` if given; `log` says what happened in what order. */
function provider(log: string[], events = EVENTS, error?: Error): Provider {
  return {
    name: "openai",
    listModels: async () => [],
    async *stream() {
      try {
        for (const e of events) {
          log.push(`source ${e.type}`);
          yield e;
        }
        if (error) throw error;
      } finally {
        log.push("source closed");
      }
    },
  };
}

function watcher(log: string[]): StreamTap {
  return {
    event: (e) => log.push(`tap ${e.type}`),
    end: (error) => log.push(error === undefined ? "tap end" : `tap failed: ${(error as Error).message}`),
  };
}

async function consume(p: Provider, log: string[], stopAfter = Number.POSITIVE_INFINITY): Promise<void> {
  let n = 0;
  for await (const e of p.stream(REQ, new AbortController().signal)) {
    log.push(`consumer ${e.type}`);
    if (++n >= stopAfter) break;
  }
}

describe("tapped model streams", () => {
  it("tells each watcher of every event before the consumer sees it, and of the end once", async () => {
    const log: string[] = [];
    await consume(
      tapProvider(provider(log), () => watcher(log)),
      log,
    );
    expect(log).toEqual([
      ...EVENTS.flatMap((e) => [`source ${e.type}`, `tap ${e.type}`, `consumer ${e.type}`]),
      "source closed",
      "tap end",
    ]);
  });

  it("passes a failure on to the consumer after telling the watcher", async () => {
    const log: string[] = [];
    const p = tapProvider(provider(log, EVENTS.slice(0, 1), new Error("overloaded")), () => watcher(log));
    await expect(consume(p, log)).rejects.toThrow("overloaded");
    expect(log).toEqual([
      "source text",
      "tap text",
      "consumer text",
      "source closed",
      "tap failed: overloaded",
    ]);
  });

  it("closes the source and ends the watch when the consumer stops early", async () => {
    const log: string[] = [];
    await consume(
      tapProvider(provider(log), () => watcher(log)),
      log,
      2,
    );
    expect(log).toEqual([
      "source text",
      "tap text",
      "consumer text",
      "source text",
      "tap text",
      "consumer text",
      "tap end",
      "source closed",
    ]);
  });

  it("hands on the provider's own stream when nothing watches the call", () => {
    const own = provider([]);
    const stream = own.stream(REQ, new AbortController().signal);
    const same: Provider = { ...own, stream: () => stream };
    expect(tapProvider(same, () => undefined).stream(REQ, new AbortController().signal)).toBe(stream);
  });
});

describe("model call spans", () => {
  const traced = () => traceInMemory("model calls");

  it("records the model, the tokens, the time to the first chunk and the finish reason", async () => {
    const spans = traced();
    await consume(tapProvider(provider([]), tracedCall), []);
    const [span] = spans();
    expect(span?.name).toBe("chat gpt-4o-mini");
    expect(span?.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.usage.input_tokens": 12,
      "gen_ai.usage.output_tokens": 3,
      "gen_ai.response.finish_reasons": ["end"],
    });
    expect(span?.attributes["gen_ai.response.time_to_first_chunk"]).toBeGreaterThanOrEqual(0);
    expect(span?.status.code).toBe(0);
  });

  it("ends a failed call's span with the error", async () => {
    const spans = traced();
    const failure = Object.assign(new Error("the model server is overloaded"), { code: "llm_overloaded" });
    await expect(consume(tapProvider(provider([], [], failure), tracedCall), [])).rejects.toThrow(
      "overloaded",
    );
    const [span] = spans();
    expect(span?.status).toEqual({ code: 2, message: "the model server is overloaded" });
    expect(span?.attributes["error.type"]).toBe("llm_overloaded");
    expect(span?.attributes["gen_ai.usage.input_tokens"]).toBeUndefined();
    expect(span?.events.map((e) => e.name)).toEqual(["exception"]);
  });

  it("keeps the tokens of a call that was stopped, as its provider reported them before the error", async () => {
    const spans = traced();
    const stopped = Object.assign(new Error("The model request was aborted."), { code: "llm_aborted" });
    const before: ModelEvent[] = [
      { type: "text", delta: "Once upon" },
      { type: "usage", usage: { inputTokens: 40, outputTokens: 2 }, estimated: true },
    ];
    await expect(consume(tapProvider(provider([], before, stopped), tracedCall), [])).rejects.toThrow(
      "aborted",
    );
    const [span] = spans();
    expect(span?.attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 40,
      "gen_ai.usage.output_tokens": 2,
      "switchboard.usage.estimated": true,
      "error.type": "llm_aborted",
    });
  });

  it("watches nothing with tracing off", () => {
    expect(tracedCall(REQ, "openai")).toBeUndefined();
  });
});
