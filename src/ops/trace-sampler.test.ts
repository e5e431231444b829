import { ROOT_CONTEXT, SpanKind } from "@opentelemetry/api";
import { SamplingDecision } from "@opentelemetry/sdk-trace-node";
import { describe, expect, it } from "vitest";
import { OtlpReceiver } from "../../test/support/otlp-receiver.js";
import { inSpan } from "../core/spans.js";
import { samplerFrom } from "./trace-sampler.js";
import { startTracing } from "./tracing.js";

/** The share of 2,000 random trace ids the sampler keeps. */
function kept(env: NodeJS.ProcessEnv): number {
  const sampler = samplerFrom(env);
  let n = 0;
  for (let i = 0; i < 2000; i++) {
    const traceId = Array.from({ length: 32 }, () => Math.floor(Math.random() * 16).toString(16)).join("");
    const { decision } = sampler.shouldSample(
      ROOT_CONTEXT,
      traceId,
      "switchboard.turn",
      SpanKind.INTERNAL,
      {},
      [],
    );
    if (decision === SamplingDecision.RECORD_AND_SAMPLED) n++;
  }
  return n / 2000;
}

describe("trace sampler from the environment", () => {
  it("keeps every trace by default, none with always_off, and about the share asked for with a ratio", () => {
    expect(kept({})).toBe(1);
    expect(kept({ OTEL_TRACES_SAMPLER: "parentbased_always_on" })).toBe(1);
    expect(kept({ OTEL_TRACES_SAMPLER: "always_off" })).toBe(0);
    expect(kept({ OTEL_TRACES_SAMPLER: "parentbased_always_off" })).toBe(0);
    expect(kept({ OTEL_TRACES_SAMPLER: "traceidratio" })).toBe(1);
    const tenth = kept({ OTEL_TRACES_SAMPLER: "PARENTBASED_TRACEIDRATIO", OTEL_TRACES_SAMPLER_ARG: "0.1" });
    expect(tenth).toBeGreaterThan(0.05);
    expect(tenth).toBeLessThan(0.15);
  });

  it("refuses a sampler or a ratio it cannot honour with a sentence that says what to set", () => {
    expect(() => samplerFrom({ OTEL_TRACES_SAMPLER: "jaeger_remote" })).toThrow(
      /OTEL_TRACES_SAMPLER is "jaeger_remote", which Switchboard does not know: set it to one of always_on, .*parentbased_traceidratio/,
    );
    for (const arg of ["1.5", "-0.1", "half"])
      expect(() =>
        samplerFrom({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: arg }),
      ).toThrow(
        `OTEL_TRACES_SAMPLER_ARG is "${arg}", which is not a share of traces: set it to a number from 0 to 1`,
      );
  });

  it("with always_off, turns are not recorded and nothing is sent", async () => {
    const receiver = await OtlpReceiver.start();
    const tracing = startTracing({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_TRACES_SAMPLER: "always_off",
    });
    try {
      await inSpan("switchboard.turn", {}, async (span) => {
        expect(span.isRecording()).toBe(false);
      });
    } finally {
      await tracing?.shutdown();
      await receiver.close();
    }
    expect(receiver.spans).toEqual([]);
  });
});
