import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { StreamTap, TapFor } from "../agent/providers/tap.js";
import { GEN_AI, tracer } from "../core/spans.js";

/**
 * Each model call a client span named as the GenAI conventions ask ("chat gpt-4o"):
 * model, provider, tokens, time to the first chunk, finish reason. With tracing off there
 * is no span to fill and the call is not watched at all.
 */
export const tracedCall: TapFor = (req, provider): StreamTap | undefined => {
  const span = tracer().startSpan(`chat ${req.model}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      [GEN_AI.operation]: "chat",
      [GEN_AI.provider]: provider,
      [GEN_AI.requestModel]: req.model,
    },
  });
  if (!span.isRecording()) return undefined;
  const started = performance.now();
  let first = true;
  let input = 0;
  let output = 0;
  let counted = false;
  let estimated = false;
  return {
    event(event) {
      if (first) {
        first = false;
        span.setAttribute(GEN_AI.timeToFirstChunk, (performance.now() - started) / 1000);
      }
      if (event.type === "usage") {
        counted = true;
        input += event.usage.inputTokens;
        output += event.usage.outputTokens;
        if (event.estimated) estimated = true;
      } else if (event.type === "stop") span.setAttribute(GEN_AI.finishReasons, [event.reason]);
    },
    end(err) {
      // Set one by one: an object with computed keys, made to be read once, was the
      // dearest line of tracing's own code in the tracing benchmark's V8 profile.
      // A call stopped or broken off is still paid for: its usage comes before its error.
      if (err === undefined || counted) {
        span.setAttribute(GEN_AI.inputTokens, input);
        span.setAttribute(GEN_AI.outputTokens, output);
        if (estimated) span.setAttribute("switchboard.usage.estimated", true);
      }
      if (err !== undefined) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
        span.setAttribute("error.type", (err as { code?: string })?.code ?? "error");
      }
      span.end();
    },
  };
};
