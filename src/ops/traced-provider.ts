import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { ModelEvent, ModelRequest, Provider } from "../agent/providers/provider.js";
import { GEN_AI, tracer } from "../core/spans.js";

/**
 * The provider, each model call a client span named as the GenAI conventions ask
 * ("chat gpt-4o"): model, provider, tokens, time to the first chunk, finish reason. With
 * tracing off the span is the API's no-op and costs a few property writes.
 */
export function tracedProvider(provider: Provider): Provider {
  return {
    name: provider.name,
    listModels: (signal) => provider.listModels(signal),
    async *stream(req: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent> {
      const span = tracer().startSpan(`chat ${req.model}`, {
        kind: SpanKind.CLIENT,
        attributes: {
          [GEN_AI.operation]: "chat",
          [GEN_AI.provider]: provider.name,
          [GEN_AI.requestModel]: req.model,
        },
      });
      const started = performance.now();
      let first = true;
      let input = 0;
      let output = 0;
      try {
        for await (const event of provider.stream(req, signal)) {
          if (first) {
            first = false;
            span.setAttribute(GEN_AI.timeToFirstChunk, (performance.now() - started) / 1000);
          }
          if (event.type === "usage") {
            input += event.usage.inputTokens;
            output += event.usage.outputTokens;
          } else if (event.type === "stop") span.setAttribute(GEN_AI.finishReasons, [event.reason]);
          yield event;
        }
        span.setAttributes({ [GEN_AI.inputTokens]: input, [GEN_AI.outputTokens]: output });
      } catch (err) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
        span.setAttribute("error.type", (err as { code?: string })?.code ?? "error");
        throw err;
      } finally {
        span.end();
      }
    },
  };
}
