import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  ParentBasedSampler,
  type Sampler,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import { BatchedTracerProvider } from "./batched-tracer.js";

function setUp(sampler: Sampler = new ParentBasedSampler({ root: new AlwaysOnSampler() })) {
  const exporter = new InMemorySpanExporter();
  const processor = new SimpleSpanProcessor(exporter);
  const resource = resourceFromAttributes({ "service.name": "batched" });
  const sdk = new BasicTracerProvider({ sampler, resource, spanProcessors: [processor] });
  const provider = new BatchedTracerProvider(sdk, { processor, resource });
  const exported = () => exporter.getFinishedSpans();
  const byName = (name: string) => exported().find((s) => s.name === name);
  return { provider, tracer: provider.getTracer("switchboard", "1"), exported, byName };
}

afterEach(() => {
  context.disable();
});

describe("batched tracer", () => {
  it("hands a turn's child spans to the SDK with the ids, times, attributes, status and errors they had", () => {
    const { provider, tracer, exported, byName } = setUp();
    const before = Date.now();
    const turn = tracer.startSpan("switchboard.turn", { attributes: { "switchboard.platform": "slack" } });
    const under = trace.setSpan(ROOT_CONTEXT, turn);
    const write = tracer.startSpan(
      "slack chat.update",
      { kind: SpanKind.CLIENT, attributes: { a: 1 } },
      under,
    );
    expect(write.isRecording()).toBe(true);
    expect(write.spanContext().traceId).toBe(turn.spanContext().traceId);
    write.setAttributes({ b: "two" });
    write.setAttribute("c", true);
    // Not a value OpenTelemetry can export: dropped, as the SDK drops it.
    write.setAttribute("d", { nested: 1 } as never);
    write.addEvent("retry", { after_ms: 1000 });
    write.recordException(new Error("slow down"));
    write.setStatus({ code: SpanStatusCode.ERROR, message: "rate limited" });
    write.end();
    expect(write.isRecording()).toBe(false);
    // Written after its end: ignored, as the SDK does.
    write.setAttribute("late", 1);
    turn.end();

    // The root went to the SDK as it ended; the child waits for its batch.
    expect(exported().map((s) => s.name)).toEqual(["switchboard.turn"]);
    provider.flush();
    const sent = byName("slack chat.update")!;
    expect(sent.spanContext().spanId).toBe(write.spanContext().spanId);
    expect(sent.spanContext().traceId).toBe(turn.spanContext().traceId);
    expect(sent.parentSpanContext?.spanId).toBe(turn.spanContext().spanId);
    expect(sent.kind).toBe(SpanKind.CLIENT);
    expect(sent.attributes).toEqual({ a: 1, b: "two", c: true });
    expect(sent.status).toEqual({ code: SpanStatusCode.ERROR, message: "rate limited" });
    expect(sent.events.map((e) => [e.name, e.attributes?.["exception.message"] ?? e.attributes])).toEqual([
      ["retry", { after_ms: 1000 }],
      ["exception", "slow down"],
    ]);
    expect(sent.events[1]?.attributes?.["exception.type"]).toBe("Error");
    // The same resource as the SDK's own spans: one service in the backend, not two.
    expect(sent.resource).toBe(byName("switchboard.turn")?.resource);
    expect(sent.ended).toBe(true);
    const startMs = sent.startTime[0] * 1000 + sent.startTime[1] / 1e6;
    const endMs = sent.endTime[0] * 1000 + sent.endTime[1] / 1e6;
    expect(startMs).toBeGreaterThanOrEqual(before - 1);
    expect(endMs).toBeGreaterThanOrEqual(startMs);
    expect(endMs).toBeLessThanOrEqual(Date.now() + 1);
    expect(sent.instrumentationScope).toMatchObject({ name: "switchboard", version: "1" });
  });

  it("keeps children found across awaits under their parent, however deep", async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const { provider, tracer, byName } = setUp();
    await tracer.startActiveSpan("switchboard.turn", async (turn) => {
      await tracer.startActiveSpan("execute_tool echo", async (tool) => {
        await new Promise((r) => setTimeout(r, 1));
        expect(trace.getActiveSpan()).toBe(tool);
        tracer.startSpan("slack reactions.add").end();
        tool.end();
      });
      turn.end();
    });
    provider.flush();
    const turn = byName("switchboard.turn")!;
    const tool = byName("execute_tool echo")!;
    const write = byName("slack reactions.add")!;
    expect(tool.parentSpanContext?.spanId).toBe(turn.spanContext().spanId);
    expect(write.parentSpanContext?.spanId).toBe(tool.spanContext().spanId);
    expect(new Set([turn, tool, write].map((s) => s.spanContext().traceId)).size).toBe(1);
  });

  it("records nothing under a root the sampler dropped, and gives new roots to the SDK", () => {
    const { provider, tracer, exported } = setUp(new ParentBasedSampler({ root: new AlwaysOffSampler() }));
    const turn = tracer.startSpan("switchboard.turn");
    expect(turn.isRecording()).toBe(false);
    const child = tracer.startSpan("write", {}, trace.setSpan(ROOT_CONTEXT, turn));
    expect(child.isRecording()).toBe(false);
    expect(child.spanContext().traceFlags & TraceFlags.SAMPLED).toBe(0);
    child.end();
    turn.end();
    provider.flush();
    expect(exported()).toEqual([]);

    const on = setUp();
    const parent = on.tracer.startSpan("a");
    const root = on.tracer.startSpan("b", { root: true }, trace.setSpan(ROOT_CONTEXT, parent));
    expect(root.spanContext().traceId).not.toBe(parent.spanContext().traceId);
    root.end();
    parent.end();
    expect(on.exported().map((s) => s.name)).toEqual(["b", "a"]);
  });

  it("hands a full batch over at once, without waiting for the timer", () => {
    const { tracer, exported } = setUp();
    const turn = tracer.startSpan("switchboard.turn");
    const under = trace.setSpan(ROOT_CONTEXT, turn);
    for (let i = 0; i < 255; i++) tracer.startSpan(`w${i}`, {}, under).end();
    expect(exported()).toHaveLength(0);
    tracer.startSpan("w255", {}, under).end();
    expect(exported()).toHaveLength(256);
    expect(new Set(exported().map((s) => s.spanContext().spanId)).size).toBe(256);
  });
});
