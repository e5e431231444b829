import {
  type Attributes,
  INVALID_SPAN_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";

/*
 * What every layer needs to make spans: the OpenTelemetry API alone (a no-op until
 * ops/tracing.ts registers a tracer), so that mcp/, runtime/ and agent/ can trace
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

/**
 * The tracer `tracer()` returns from now on (ops/tracing.ts, when it registers an
 * exporter; undefined when it shuts down): taken as is, where the API would look its
 * global provider up (and check its version) on every span.
 */
export function useTracer(t: Tracer | undefined): void {
  registered = t;
}

/** The one span of tracing off: records nothing, so every caller can share it. */
const NOT_RECORDING: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Tracing off: a span is a call that returns the shared non-recording span, and an
 * active span's work runs as is. The API's own no-op tracer reached through its global
 * provider looks two globals up per span (checking each one's version), validates the
 * context's ids, and copies the context for the span it makes active: in the tracing
 * benchmark's V8 profiles, 0.46 s over the untraced stretches' ~1,450 turns, where the
 * same spans cost 0.14 s of the API's time with tracing on. Running the work directly is
 * what the API's no-op does when no context manager is registered, which only ops/tracing.ts
 * does, and then it has registered its tracer too.
 */
const NOOP: Tracer = {
  startSpan: () => NOT_RECORDING,
  // The work is the last argument of every form of the call.
  startActiveSpan: ((...args: unknown[]) =>
    (args[args.length - 1] as (span: Span) => unknown)(NOT_RECORDING)) as Tracer["startActiveSpan"],
};

/**
 * Spans of Switchboard: the tracer ops/tracing.ts registered when an endpoint is set,
 * else a no-op (see `NOOP`). Spans go only where Switchboard's own OpenTelemetry
 * variables say; a provider registered with the API by other means is not used.
 */
export function tracer(): Tracer {
  return registered ?? NOOP;
}

/** The trace a span belongs to; undefined with tracing off (its span records nothing). */
export function traceIdOf(span: Span): string | undefined {
  return span.isRecording() ? span.spanContext().traceId : undefined;
}

/** The trace id of the span in effect, for log lines; undefined when tracing is off. */
export function currentTraceId(): string | undefined {
  if (!registered) return undefined;
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
