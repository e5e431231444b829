import { INVALID_SPAN_CONTEXT, type Span, type Tracer, trace } from "@opentelemetry/api";
import { afterEach, describe, expect, it } from "vitest";
import { currentTraceId, inSpan, tracer, useTracer } from "./spans.js";

afterEach(() => useTracer(undefined));

describe("spans with tracing off", () => {
  it("makes non-recording spans and runs an active span's work as is, its result and its error passed on", async () => {
    const span = tracer().startSpan("a write");
    expect(span.isRecording()).toBe(false);
    expect(trace.isSpanContextValid(span.spanContext())).toBe(false);
    let seen: Span | undefined;
    await expect(
      inSpan("switchboard.turn", { "switchboard.platform": "slack" }, async (s) => {
        seen = s;
        expect(currentTraceId()).toBeUndefined();
        return 42;
      }),
    ).resolves.toBe(42);
    expect(seen?.isRecording()).toBe(false);
    await expect(
      inSpan("switchboard.turn", {}, async () => {
        throw new Error("the turn failed");
      }),
    ).rejects.toThrow("the turn failed");
  });

  it("uses the tracer ops/tracing.ts registers, and the no-op again once it is taken back", () => {
    const registered = {
      startSpan: () => trace.wrapSpanContext(INVALID_SPAN_CONTEXT),
    } as unknown as Tracer;
    useTracer(registered);
    expect(tracer()).toBe(registered);
    useTracer(undefined);
    expect(tracer()).not.toBe(registered);
  });
});
