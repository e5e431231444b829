import { trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { OtlpReceiver } from "../../test/support/otlp-receiver.js";
import { currentTraceId, inSpan } from "../core/spans.js";
import { startTracing } from "./tracing.js";

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
    expect(receiver.requests).toEqual([{ path: "/v1/traces", contentType: "application/json" }]);
    expect(startTracing({})).toBeUndefined();
  });
});
