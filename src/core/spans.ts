import {
  type Attributes,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";

/*
 * What every layer needs to make spans: the OpenTelemetry API alone (a no-op until
 * ops/tracing.ts registers a provider), so that mcp/, runtime/ and agent/ can trace
 * without depending on the exporter's setup above them.
 */

/**
 * The GenAI semantic conventions' attribute names (still "development" in OpenTelemetry:
 * copied here, as its guidance asks, rather than imported from the incubating entry point).
 */
export const GEN_AI = {
  operation: "gen_ai.operation.name",
  provider: "gen_ai.provider.name",
  requestModel: "gen_ai.request.model",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  finishReasons: "gen_ai.response.finish_reasons",
  /** Seconds from the request to the first streamed chunk. */
  timeToFirstChunk: "gen_ai.response.time_to_first_chunk",
  toolName: "gen_ai.tool.name",
  toolArguments: "gen_ai.tool.call.arguments",
  toolResult: "gen_ai.tool.call.result",
} as const;

export const VERSION = "0.1.0";

let registered: Tracer | undefined;
let cached: { provider: TracerProvider; tracer: Tracer } | undefined;

/**
 * The tracer `tracer()` returns from now on (ops/tracing.ts, when it registers an
 * exporter; undefined when it shuts down): taken as is, where the API would look its
 * global provider up (and check its version) on every span.
 */
export function useTracer(t: Tracer | undefined): void {
  registered = t;
}

/**
 * Spans of Switchboard: a no-op until ops/tracing.ts registered an exporter (then nearly
 * free). Otherwise the global provider's, kept while the global provider is the same
 * one: asking the provider for it builds a key string each time. A tracer taken before
 * registration follows the provider registered later; after `trace.disable()` the global
 * provider is a new object, so the next call takes a tracer from that one.
 */
export function tracer(): Tracer {
  if (registered) return registered;
  const provider = trace.getTracerProvider();
  if (cached?.provider !== provider)
    cached = { provider, tracer: provider.getTracer("switchboard", VERSION) };
  return cached.tracer;
}

/** The trace id of the span in effect, for log lines; undefined when tracing is off. */
export function currentTraceId(): string | undefined {
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx && trace.isSpanContextValid(ctx) ? ctx.traceId : undefined;
}

/**
 * Runs `work` in a span that is the parent of the spans started inside it; an error ends
 * it with the error status (and is thrown on).
 */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  return tracer().startActiveSpan(name, { attributes, kind }, async (span) => {
    try {
      return await work(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
      throw err;
    } finally {
      span.end();
    }
  });
}
