import {
  type Context,
  type ContextManager,
  context,
  type Span,
  SpanKind,
  type SpanOptions,
  TraceFlags,
  type Tracer,
  type TracerOptions,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";
import type { Resource } from "@opentelemetry/resources";
import { type Sampler, SamplingDecision, type SpanProcessor } from "@opentelemetry/sdk-trace-node";
import { type InstrumentationScope, NO_LINKS, RecordedSpan, randomId } from "./recorded-span.js";

/*
 * Spans are recorded as plain objects and handed, in batches, to the SDK's span
 * processor, each as the finished span it exports (a ReadableSpan): the SDK still batches
 * and exports every span, but the work of its Span class (sampling again under a parent
 * already sampled, time conversions, span metrics, a processor call per span) is not
 * done among the turn's other work. Measured with perf in the tracing bench, recording
 * then making SDK spans in batches took the main thread's time in tracing code from
 * 6.1 % to 3.6 % of the bot's own; handing the recorded spans themselves instead of
 * making SDK spans of them halved what is left (a turn of eleven spans, serialized for
 * OTLP, alone: 154-223 µs before, 65-122 µs after). A trace's root (a turn's span) asks
 * the configured sampler, as the SDK's tracer would; its children follow its decision,
 * as every standard sampler's would. Left to the SDK's Span class, the root alone was
 * about half of what tracing still cost a turn in the bot's V8 profile.
 */

/** Spans handed to the processor at once when this many have ended, else after FLUSH_AFTER_MS. */
const FLUSH_AT = 256;
const FLUSH_AFTER_MS = 500;

/** A tracer's spans' origin (see `SpanOrigin`), and how it samples roots and finds parents. */
interface Scope {
  sink: { batch: SpanBatch; resource: Resource; sampler: Sampler; contexts: Contexts };
  /** The tracer's name and version, one object shared by its spans. */
  instrumentation: InstrumentationScope;
}

/** Ended recorded spans waiting for the SDK's processor, handed over in one go. */
class SpanBatch {
  private spans: RecordedSpan[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly processor: SpanProcessor) {}

  add(span: RecordedSpan): void {
    this.spans.push(span);
    if (this.spans.length >= FLUSH_AT) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), FLUSH_AFTER_MS);
      this.timer.unref();
    }
  }

  /** Hands every ended span to the processor (which batches and exports them in turn). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const spans = this.spans;
    this.spans = [];
    for (const s of spans) this.processor.onEnd(s);
  }
}

/** A tracer whose spans are recorded, then handed to the SDK's processor in batches. */
class BatchedTracer implements Tracer {
  constructor(private readonly scope: Scope) {}

  startSpan(name: string, options: SpanOptions = {}, ctx: Context = this.scope.sink.contexts.active()): Span {
    const parentSpan = options.root ? undefined : trace.getSpan(ctx);
    // A parent recorded here is valid and sampled: its ids need no checking.
    if (parentSpan instanceof RecordedSpan) {
      const parent = parentSpan.spanContext();
      return new RecordedSpan(this.scope, name, options, parent, parent.traceId, parent.traceState);
    }
    const parent = parentSpan?.spanContext();
    if (parent && trace.isSpanContextValid(parent)) {
      // Under a parent the sampler dropped (or a remote one not sampled): nothing to record.
      if ((parent.traceFlags & TraceFlags.SAMPLED) === 0) return trace.wrapSpanContext(parent);
      return new RecordedSpan(this.scope, name, options, parent, parent.traceId, parent.traceState);
    }
    return this.root(name, options, options.root ? trace.deleteSpan(ctx) : ctx);
  }

  /**
   * A new trace, sampled as the SDK's tracer samples one. A span the sampler would only
   * record (RECORD, not sampled) is never exported by the batch processor, the one
   * processor here, so it is not recorded either.
   */
  private root(name: string, options: SpanOptions, ctx: Context): Span {
    const traceId = randomId(16);
    const kind = options.kind ?? SpanKind.INTERNAL;
    const sampled = this.scope.sink.sampler.shouldSample(
      ctx,
      traceId,
      name,
      kind,
      options.attributes ?? {},
      options.links ?? NO_LINKS,
    );
    if (sampled.decision !== SamplingDecision.RECORD_AND_SAMPLED)
      return trace.wrapSpanContext({
        traceId,
        spanId: randomId(8),
        traceFlags: TraceFlags.NONE,
        ...(sampled.traceState && { traceState: sampled.traceState }),
      });
    const attributes = sampled.attributes
      ? { ...options.attributes, ...sampled.attributes }
      : options.attributes;
    return new RecordedSpan(
      this.scope,
      name,
      { ...options, kind, ...(attributes && { attributes }) },
      undefined,
      traceId,
      sampled.traceState,
    );
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(
    name: string,
    options: SpanOptions,
    fn: F,
  ): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(
    name: string,
    options: SpanOptions,
    ctx: Context,
    fn: F,
  ): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(
    name: string,
    a?: SpanOptions | F,
    b?: Context | F,
    c?: F,
  ): ReturnType<F> {
    const fn = (c ?? (typeof b === "function" ? b : a)) as F;
    const options = typeof a === "function" ? {} : (a ?? {});
    const contexts = this.scope.sink.contexts;
    const parent = typeof b === "object" ? b : contexts.active();
    const span = this.startSpan(name, options, parent);
    return contexts.with(trace.setSpan(parent, span), fn as (span: Span) => ReturnType<F>, undefined, span);
  }
}

/**
 * The context manager's two calls a tracer makes. Called on the manager itself, not
 * through the API's global `context`, which looks the manager up (and checks its version)
 * on every call: a turn's spans make dozens.
 */
type Contexts = Pick<ContextManager, "active" | "with">;

/** Where spans go and how traces are chosen: the SDK's processor, resource and sampler. */
export interface SpanSink {
  processor: SpanProcessor;
  resource: Resource;
  /** Asked once per trace, at its root. */
  sampler: Sampler;
  /** The registered context manager (the API's global `context` when not given). */
  contexts?: Contexts;
}

/** Tracers whose spans are recorded, then handed over in batches; `flush` hands over what has ended. */
export class BatchedTracerProvider implements TracerProvider {
  private readonly sink: Scope["sink"];
  private readonly tracers = new Map<string, Tracer>();

  constructor({ processor, resource, sampler, contexts = context }: SpanSink) {
    this.sink = { batch: new SpanBatch(processor), resource, sampler, contexts };
  }

  getTracer(name: string, version?: string, options?: TracerOptions): Tracer {
    const scope = `${name}@${version ?? ""}`;
    let tracer = this.tracers.get(scope);
    if (!tracer) {
      tracer = new BatchedTracer({
        sink: this.sink,
        instrumentation: {
          name,
          ...(version !== undefined && { version }),
          ...(options?.schemaUrl !== undefined && { schemaUrl: options.schemaUrl }),
        },
      });
      this.tracers.set(scope, tracer);
    }
    return tracer;
  }

  flush(): void {
    this.sink.batch.flush();
  }
}
