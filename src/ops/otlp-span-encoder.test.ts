import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } from "@opentelemetry/api";
import { TraceState } from "@opentelemetry/core";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOnSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { decodeTraceRequest } from "../../test/support/otlp-protobuf.js";
import { BatchedTracerProvider } from "./batched-tracer.js";
import { encodeTraceRequest } from "./otlp-span-encoder.js";

/** Every value an attribute can hold, at the edges of each encoding. */
const EDGES = {
  ascii: "slack chat.update",
  empty: "",
  accents: "héllo wörld",
  emoji: "ship it 🚀 ✓",
  // 42 three-byte characters: the longest string whose length still fits one byte.
  longest_short: "✓".repeat(42),
  // 43 of them: 129 bytes, a two-byte length.
  first_long: "✓".repeat(43),
  lone_surrogate: "a\ud800b",
  // A span over 16 KiB: its own length takes three bytes.
  large: "x".repeat(20_000),
  zero: 0,
  small: 127,
  two_bytes: 128,
  int32: 2 ** 31,
  uint32_max: 2 ** 32 - 1,
  past_uint32: 2 ** 32,
  safe_max: Number.MAX_SAFE_INTEGER,
  past_safe: 2 ** 60,
  minus_one: -1,
  negative: -(2 ** 40),
  fraction: 1.5,
  tiny: 5e-324,
  infinite: Number.POSITIVE_INFINITY,
  nan: Number.NaN,
  past_int64: 2 ** 63,
  yes: true,
  no: false,
  strings: ["stop", "length"],
  numbers: [1, -2, 2.5],
  flags: [true, false],
  none: [],
};

/** Spans as the bot's tracer records them: a root, children with events, errors, links and a remote parent. */
function recordedSpans(): ReadableSpan[] {
  const exporter = new InMemorySpanExporter();
  const provider = new BatchedTracerProvider({
    processor: new SimpleSpanProcessor(exporter),
    resource: resourceFromAttributes({ "service.name": "switchboard", "service.version": "0.1.0" }),
    sampler: new AlwaysOnSampler(),
  });
  const tracer = provider.getTracer("switchboard", "0.1.0");
  const other = provider.getTracer("switchboard-mcp");
  const turn = tracer.startSpan("switchboard.turn", { attributes: { "switchboard.platform": "slack" } });
  const under = trace.setSpan(ROOT_CONTEXT, turn);
  const edges = tracer.startSpan("edges", { kind: SpanKind.CLIENT, attributes: EDGES }, under);
  edges.addEvent("retry", { after_ms: 1000, reason: "ratelimited" });
  edges.addEvent("bare");
  edges.recordException(new Error("slow down: ✗"));
  edges.setStatus({ code: SpanStatusCode.ERROR, message: "rate limited ⏳" });
  edges.end();
  const linked = other.startSpan(
    "execute_tool echo",
    {
      kind: SpanKind.INTERNAL,
      links: [
        { context: turn.spanContext(), attributes: { why: "follows" } },
        {
          context: {
            traceId: "0af7651916cd43dd8448eb211c80319c",
            spanId: "b7ad6b7169203331",
            traceFlags: TraceFlags.NONE,
            isRemote: true,
            traceState: new TraceState("vendor=value,other=1"),
          },
        },
      ],
    },
    under,
  );
  linked.setStatus({ code: SpanStatusCode.OK });
  linked.end();
  const remote = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    spanId: "00f067aa0ba902b7",
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
    traceState: new TraceState("congo=t61rcWkgMzE"),
  });
  tracer.startSpan("from elsewhere", { kind: SpanKind.SERVER }, remote).end();
  turn.end();
  provider.flush();
  return exporter.getFinishedSpans();
}

/** Spans of the SDK's own tracer, of another resource: any finished span is encoded. */
function sdkSpans(): ReadableSpan[] {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": "elsewhere" }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer("sdk", "2.0.0", { schemaUrl: "https://opentelemetry.io/schemas/1.30.0" });
  const span = tracer.startSpan("sdk span", { attributes: { n: 3, s: "three" } });
  span.addEvent("halfway", { at: 0.5 });
  span.end();
  tracer.startSpan("sdk producer", { kind: SpanKind.PRODUCER }).end();
  return exporter.getFinishedSpans();
}

const library = (spans: ReadableSpan[]) => Buffer.from(ProtobufTraceSerializer.serializeRequest(spans) ?? []);

describe("OTLP span encoder", () => {
  it("writes the same bytes as OpenTelemetry's serializer, for every kind of value, event, link and parent", () => {
    const spans = [...recordedSpans(), ...sdkSpans()];
    expect(spans).toHaveLength(6);
    const ours = Buffer.from(encodeTraceRequest(spans));
    expect(ours.length).toBeGreaterThan(20_000);
    expect(ours.equals(library(spans))).toBe(true);
  });

  it("gives each batch its own bytes: the writer it reuses keeps nothing from the last one", () => {
    const first = recordedSpans();
    const second = sdkSpans();
    // Kept as returned (Buffer.from would copy it), while the next batch is written.
    const a = encodeTraceRequest(first);
    const b = Buffer.from(encodeTraceRequest(second));
    expect(b.equals(library(second))).toBe(true);
    expect(Buffer.from(a).equals(library(first))).toBe(true);
    expect(Buffer.from(encodeTraceRequest(first)).equals(Buffer.from(a))).toBe(true);
    expect(encodeTraceRequest([])).toHaveLength(0);
  });

  it("writes a request of megabytes, and the ones after it, exactly", () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BatchedTracerProvider({
      processor: new SimpleSpanProcessor(exporter),
      resource: resourceFromAttributes({ "service.name": "switchboard" }),
      sampler: new AlwaysOnSampler(),
    });
    // A tool's result kept as an attribute: 3 MB in one span, past what the writer keeps between requests.
    provider
      .getTracer("switchboard")
      .startSpan("huge", { attributes: { result: "é".repeat(1_500_000) } })
      .end();
    provider.flush();
    const huge = exporter.getFinishedSpans();
    const bytes = Buffer.from(encodeTraceRequest(huge));
    expect(bytes.length).toBeGreaterThan(3_000_000);
    expect(bytes.equals(library(huge))).toBe(true);
    const after = recordedSpans();
    expect(Buffer.from(encodeTraceRequest(after)).equals(library(after))).toBe(true);
  });

  it("starts each request afresh when the last one failed half-way", () => {
    const spans = recordedSpans();
    const broken = Object.create(spans[0] as object, {
      spanContext: {
        value: () => {
          throw new Error("not a span");
        },
      },
    }) as ReadableSpan;
    expect(() => encodeTraceRequest([spans[1] as ReadableSpan, broken])).toThrow("not a span");
    expect(Buffer.from(encodeTraceRequest(spans)).equals(library(spans))).toBe(true);
  });

  it("reads back as the spans it was given", () => {
    const spans = recordedSpans();
    const edges = spans.find((s) => s.name === "edges") as ReadableSpan;
    const request = decodeTraceRequest(encodeTraceRequest(spans)) as {
      resourceSpans: { scopeSpans: { spans: { spanId: string; name: string; attributes: unknown[] }[] }[] }[];
    };
    const decoded = request.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    expect(decoded.map((s) => s.name).sort()).toEqual(spans.map((s) => s.name).sort());
    const decodedEdges = decoded.find((s) => s.name === "edges");
    expect(decodedEdges?.spanId).toBe(edges.spanContext().spanId);
    expect(JSON.stringify(decodedEdges?.attributes)).toContain("x".repeat(20_000));
    expect(JSON.stringify(decodedEdges?.attributes)).toContain("ship it 🚀 ✓");
  });
});
