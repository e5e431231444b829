import { trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { OtlpReceiver } from "../../test/support/otlp-receiver.js";
import { currentTraceId, inSpan } from "../core/spans.js";
import { startTracing, tracesProtocol, tracesUrl } from "./tracing.js";

describe("tracing", () => {
  it("creates nothing without an OTLP endpoint: spans are the API's no-op and carry no trace id", async () => {
    expect(startTracing({})).toBeUndefined();
    expect(
      startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "true" }),
    ).toBe(undefined);
    await inSpan("switchboard.turn", {}, async (span) => {
      expect(span.isRecording()).toBe(false);
      expect(currentTraceId()).toBeUndefined();
    });
  });

  it("with an endpoint, records spans whose trace id the log lines can name", async () => {
    const receiver = await OtlpReceiver.start();
    const tracing = startTracing({
      OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.endpoint}/`,
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20t0ken,x-team=ops",
    });
    try {
      expect(tracing).toBeDefined();
      await inSpan("switchboard.turn", {}, async (span) => {
        expect(span.isRecording()).toBe(true);
        expect(currentTraceId()).toBe(span.spanContext().traceId);
        // Children find their parent across awaits.
        await new Promise((r) => setTimeout(r, 1));
        const child = trace.getTracer("t").startSpan("child");
        expect(trace.getActiveSpan()?.spanContext().spanId).toBe(span.spanContext().spanId);
        child.end();
      });
    } finally {
      await tracing?.shutdown();
      await receiver.close();
    }
    expect(receiver.spans.map((s) => s.name).sort()).toEqual(["child", "switchboard.turn"]);
    // OTLP/HTTP's default encoding.
    expect(receiver.requests).toEqual([{ path: "/v1/traces", contentType: "application/x-protobuf" }]);
    expect(startTracing({})).toBeUndefined();
  });

  it("flushes every span ended so far to the receiver and goes on tracing after it", async () => {
    const receiver = await OtlpReceiver.start();
    const tracing = startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint });
    try {
      await inSpan("first", {}, async () => {});
      // Without the flush the span waits for the batch's timer (half a second) and the processor's (five).
      expect(receiver.spans).toEqual([]);
      await tracing?.flush();
      expect(receiver.spans.map((s) => s.name)).toEqual(["first"]);
      await inSpan("second", {}, async () => {});
      await tracing?.flush();
      expect(receiver.spans.map((s) => s.name)).toEqual(["first", "second"]);
    } finally {
      await tracing?.shutdown();
      await receiver.close();
    }
    // One export per flush, none left for the shutdown.
    expect(receiver.requests).toHaveLength(2);
  });

  it("sends JSON when OTEL_EXPORTER_OTLP_PROTOCOL asks for it, with the same spans and attributes", async () => {
    const receiver = await OtlpReceiver.start();
    const tracing = startTracing({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "sb-json",
    });
    try {
      await inSpan(
        "switchboard.turn",
        { "gen_ai.request.model": "m", "switchboard.tools": 2 },
        async () => {},
      );
    } finally {
      await tracing?.shutdown();
      await receiver.close();
    }
    expect(receiver.requests).toEqual([{ path: "/v1/traces", contentType: "application/json" }]);
    expect(receiver.spans).toMatchObject([
      {
        name: "switchboard.turn",
        service: "sb-json",
        attributes: { "gen_ai.request.model": "m", "switchboard.tools": 2 },
      },
    ]);
  });

  it("refuses a protocol it cannot send with a sentence that names the ones it can", () => {
    expect(() =>
      startTracing({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4317",
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
      }),
    ).toThrow(/"grpc", which Switchboard cannot send: set it to http\/protobuf or http\/json/);
    expect(() => tracesProtocol({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" })).not.toThrow();
  });

  it("refuses an endpoint that is not an http(s) address with a sentence, never repeating its value", () => {
    expect(() => tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: "127.0.0.1:4318" })).toThrow(
      /^OTEL_EXPORTER_OTLP_ENDPOINT is not a URL: set it to your collector's OTLP\/HTTP endpoint \(for example http:\/\/127.0.0.1:4318\), or unset it/,
    );
    let refusal = "";
    try {
      tracesUrl({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "grpc://user:secret@collector:4317" });
    } catch (err) {
      refusal = (err as Error).message;
    }
    expect(refusal).toMatch(
      /^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is a "grpc:" address, not http:\/\/ or https:\/\//,
    );
    expect(refusal).not.toContain("secret");
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318/" })).toBe(
      "http://127.0.0.1:4318/v1/traces",
    );
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://c.example/otlp" })).toBe(
      "https://c.example/otlp",
    );
    expect(tracesUrl({})).toBeUndefined();
  });
});
