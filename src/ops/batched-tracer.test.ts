import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { TraceState } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  InMemorySpanExporter,
  ParentBasedSampler,
  type Sampler,
  SamplingDecision,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import { BatchedTracerProvider } from "./batched-tracer.js";

function setUp(sampler: Sampler = new ParentBasedSampler({ root: new AlwaysOnSampler() })) {
  const exporter = new InMemorySpanExporter();
  const processor = new SimpleSpanProcessor(exporter);
  const resource = resourceFromAttributes({ "service.name": "batched" });
  const provider = new BatchedTracerProvider({ processor, resource, sampler });
  const exported = () => exporter.getFinishedSpans();
  const byName = (name: string) => exported().find((s) => s.name === name);
  return { provider, tracer: provider.getTracer("switchboard", "1"), exported, byName, resource };
}

afterEach(() => {
  context.disable();
});

describe("batched tracer", () => {
  it("hands a turn's spans to the SDK with the ids, times, attributes, status and errors they had", () => {
    const { provider, tracer, exported, byName, resource } = setUp();
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

    // Both wait for their batch.
    expect(exported()).toEqual([]);
    provider.flush();
    expect(exported().map((s) => s.name)).toEqual(["slack chat.update", "switchboard.turn"]);
    const root = byName("switchboard.turn")!;
    expect(root.parentSpanContext).toBeUndefined();
    expect(root.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(root.spanContext().spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(root.spanContext().traceFlags).toBe(TraceFlags.SAMPLED);
    expect(root.attributes).toEqual({ "switchboard.platform": "slack" });
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
    // The provider's resource on every span: one service in the backend.
    expect(sent.resource).toBe(resource);
    expect(root.resource).toBe(resource);
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

  it("records nothing under a root the sampler dropped, and starts a new trace for a root asked for", () => {
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
    on.provider.flush();
    expect(on.exported().map((s) => s.name)).toEqual(["b", "a"]);
    expect(on.exported()[0]?.parentSpanContext).toBeUndefined();
  });

  it("asks the sampler once per trace, at its root, and keeps what it adds", () => {
    const asked: { traceId: string; name: string; kind: SpanKind; parent: unknown }[] = [];
    const sampler: Sampler = {
      shouldSample(ctx, traceId, name, kind) {
        asked.push({ traceId, name, kind, parent: trace.getSpan(ctx) });
        return name === "dropped"
          ? { decision: SamplingDecision.NOT_RECORD }
          : {
              decision: SamplingDecision.RECORD_AND_SAMPLED,
              attributes: { "sampler.rule": "all" },
              traceState: new TraceState("vendor=1"),
            };
      },
      toString: () => "stub",
    };
    const { provider, tracer, exported } = setUp(sampler);
    const turn = tracer.startSpan("switchboard.turn", { kind: SpanKind.SERVER, attributes: { a: 1 } });
    tracer.startSpan("chat m", {}, trace.setSpan(ROOT_CONTEXT, turn)).end();
    turn.end();
    const dropped = tracer.startSpan("dropped");
    expect(dropped.isRecording()).toBe(false);
    expect(dropped.spanContext().traceFlags).toBe(TraceFlags.NONE);
    // A root asked for under a parent: the sampler sees no parent.
    tracer.startSpan("fresh", { root: true }, trace.setSpan(ROOT_CONTEXT, turn)).end();
    provider.flush();

    expect(asked.map((a) => [a.name, a.kind, a.parent])).toEqual([
      ["switchboard.turn", SpanKind.SERVER, undefined],
      ["dropped", SpanKind.INTERNAL, undefined],
      ["fresh", SpanKind.INTERNAL, undefined],
    ]);
    expect(asked[0]?.traceId).toBe(turn.spanContext().traceId);
    const sent = exported();
    expect(sent.map((s) => s.name)).toEqual(["chat m", "switchboard.turn", "fresh"]);
    expect(sent[1]?.attributes).toEqual({ a: 1, "sampler.rule": "all" });
    expect(sent[1]?.spanContext().traceState?.serialize()).toBe("vendor=1");
    // The child follows its root's decision and carries its trace state.
    expect(sent[0]?.spanContext().traceState?.serialize()).toBe("vendor=1");
    expect(sent[0]?.attributes).toEqual({});
  });

  it("keeps at most 128 attributes as the SDK does, counting the ones dropped, whatever their names", () => {
    const { provider, tracer, byName } = setUp();
    const span = tracer.startSpan("many", { attributes: { constructor: "c", toString: 1 } });
    // A key, not the prototype: the attributes inherit nothing that could take it.
    span.setAttribute("__proto__", "p");
    for (let i = 0; i < 129; i++) span.setAttribute(`k${i}`, i);
    // An attribute already kept may still change past the limit.
    span.setAttribute("constructor", "changed");
    span.setAttribute("k0", "changed");
    span.setAttribute("list", ["a", "b"]);
    span.setAttribute("mixed", ["a", 1] as never);
    span.end();
    provider.flush();
    const sent = byName("many")!;
    expect(Object.keys(sent.attributes)).toHaveLength(128);
    expect(sent.attributes.constructor).toBe("changed");
    expect(sent.attributes.toString).toBe(1);
    expect(sent.attributes.k0).toBe("changed");
    expect(Object.hasOwn(sent.attributes, "__proto__")).toBe(true);
    expect(Object.getOwnPropertyDescriptor(sent.attributes, "__proto__")?.value).toBe("p");
    expect(sent.attributes.k124).toBe(124);
    expect(sent.attributes.k125).toBeUndefined();
    // k125-k128 and the list: past the limit. The mixed array is not a value at all.
    expect(sent.droppedAttributesCount).toBe(5);
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
