import {
  type Attributes,
  type AttributeValue,
  type Context,
  context,
  type Exception,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  type SpanOptions,
  type SpanStatus,
  type TimeInput,
  TraceFlags,
  type Tracer,
  type TracerOptions,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";
import { type IdGenerator, RandomIdGenerator } from "@opentelemetry/sdk-trace-base";

/*
 * A turn's spans below its own are recorded as plain objects and handed to the
 * OpenTelemetry SDK in batches: the SDK still makes, samples, limits, batches and exports
 * every span, but does its part for many spans in one go instead of once per span among
 * the turn's other work, where every call runs cold. Measured with perf in the tracing
 * bench, this took the main thread's time in tracing code from 6.1 % to 3.6 % of the
 * bot's own. A trace's root span (a turn's) is the SDK's own from its start: its sampling
 * decision is the one its recorded children follow.
 */

/** Spans handed to the SDK at once when this many have ended, else after FLUSH_AFTER_MS. */
const FLUSH_AT = 256;
const FLUSH_AFTER_MS = 500;

/** Milliseconds since the epoch with the monotonic clock's precision, as the SDK takes them. */
function now(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * The SDK's ids, except while a recorded span is handed over: then the ids that span
 * already showed (its children and the log lines know it by them).
 */
export class HandedIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  private handed: string | undefined;

  generateTraceId(): string {
    return this.random.generateTraceId();
  }

  generateSpanId(): string {
    return this.handed ?? this.random.generateSpanId();
  }

  with<T>(spanId: string, fn: () => T): T {
    this.handed = spanId;
    try {
      return fn();
    } finally {
      this.handed = undefined;
    }
  }
}

/** 64 random bits in hex, never all zero (W3C): the SDK's own ids are made the same way. */
function newSpanId(): string {
  const high = (Math.random() * 2 ** 32) >>> 0;
  const low = (Math.random() * 2 ** 32) >>> 0 || 1;
  return high.toString(16).padStart(8, "0") + low.toString(16).padStart(8, "0");
}

type Event =
  | { exception: Exception; time: number }
  | { name: string; attributes: Attributes | undefined; time: number };

/** A span under a sampled parent, kept as data until its batch goes to the SDK. */
class RecordedSpan implements Span {
  private readonly context: SpanContext;
  readonly start: number;
  /** Milliseconds since the epoch; 0 while the span is open. */
  finishedAt = 0;
  readonly attributes: Attributes;
  readonly kind: SpanKind;
  links: Link[] | undefined;
  events: Event[] | undefined;
  status: SpanStatus | undefined;

  constructor(
    private readonly batch: SpanBatch,
    /** The SDK's tracer that makes it, in the end. */
    readonly sdk: Tracer,
    public name: string,
    options: SpanOptions,
    readonly parent: SpanContext,
  ) {
    this.context = {
      traceId: parent.traceId,
      spanId: newSpanId(),
      traceFlags: TraceFlags.SAMPLED,
      ...(parent.traceState && { traceState: parent.traceState }),
    };
    this.start = timeOf(options.startTime);
    this.kind = options.kind ?? SpanKind.INTERNAL;
    this.attributes = { ...options.attributes };
    if (options.links?.length) this.links = [...options.links];
  }

  spanContext(): SpanContext {
    return this.context;
  }

  setAttribute(key: string, value: AttributeValue): this {
    if (this.finishedAt === 0) this.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    if (this.finishedAt === 0) Object.assign(this.attributes, attributes);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.finishedAt !== 0) return this;
    const timed = isTime(attributesOrTime);
    this.note({
      name,
      attributes: timed ? undefined : (attributesOrTime as Attributes | undefined),
      time: timeOf(timed ? attributesOrTime : time),
    });
    return this;
  }

  addLink(link: Link): this {
    if (this.finishedAt === 0) this.links = [...(this.links ?? []), link];
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.finishedAt === 0) this.status = status;
    return this;
  }

  updateName(name: string): this {
    if (this.finishedAt === 0) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.finishedAt !== 0) return;
    this.finishedAt = timeOf(endTime);
    this.batch.add(this);
  }

  isRecording(): boolean {
    return this.finishedAt === 0;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    if (this.finishedAt === 0) this.note({ exception, time: timeOf(time) });
  }

  private note(event: Event): void {
    if (this.events) this.events.push(event);
    else this.events = [event];
  }
}

function isTime(x: unknown): x is TimeInput {
  return typeof x === "number" || x instanceof Date || (Array.isArray(x) && typeof x[0] === "number");
}

/** A time the SDK would take, as milliseconds since the epoch. */
function timeOf(t: TimeInput | undefined): number {
  if (t === undefined) return now();
  if (typeof t === "number") return t < performance.now() + 1 ? performance.timeOrigin + t : t;
  if (t instanceof Date) return t.getTime();
  return t[0] * 1000 + t[1] / 1e6;
}

/** Ended recorded spans waiting for the SDK, handed over in one go. */
class SpanBatch {
  private spans: RecordedSpan[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly ids: HandedIds) {}

  add(span: RecordedSpan): void {
    this.spans.push(span);
    if (this.spans.length >= FLUSH_AT) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), FLUSH_AFTER_MS);
      this.timer.unref();
    }
  }

  /** Hands every ended span to the SDK (which batches and exports them in turn). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const spans = this.spans;
    this.spans = [];
    for (const s of spans) this.hand(s);
  }

  private hand(s: RecordedSpan): void {
    const parent = trace.setSpanContext(ROOT_CONTEXT, s.parent);
    const options: SpanOptions = { kind: s.kind, attributes: s.attributes, startTime: s.start };
    if (s.links) options.links = s.links;
    const span = this.ids.with(s.spanContext().spanId, () => s.sdk.startSpan(s.name, options, parent));
    for (const e of s.events ?? []) {
      if ("exception" in e) span.recordException(e.exception, e.time);
      else span.addEvent(e.name, e.attributes, e.time);
    }
    if (s.status) span.setStatus(s.status);
    span.end(s.finishedAt);
  }
}

/** A tracer of the SDK's whose spans under a sampled parent are recorded, then handed over in batches. */
class BatchedTracer implements Tracer {
  constructor(
    private readonly sdk: Tracer,
    private readonly batch: SpanBatch,
  ) {}

  startSpan(name: string, options: SpanOptions = {}, ctx: Context = context.active()): Span {
    const parent = options.root ? undefined : trace.getSpanContext(ctx);
    // A root: the SDK's own span, sampled by the SDK's sampler.
    if (!parent || !trace.isSpanContextValid(parent)) return this.sdk.startSpan(name, options, ctx);
    // Under a parent the sampler dropped (or a remote one not sampled): nothing to record.
    if ((parent.traceFlags & TraceFlags.SAMPLED) === 0) return trace.wrapSpanContext(parent);
    return new RecordedSpan(this.batch, this.sdk, name, options, parent);
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
    const parent = typeof b === "object" ? b : context.active();
    const span = this.startSpan(name, options, parent);
    return context.with(trace.setSpan(parent, span), fn as (span: Span) => ReturnType<F>, undefined, span);
  }
}

/** The SDK's provider, its tracers batched; `flush` hands over what has ended (before shutting down). */
export class BatchedTracerProvider implements TracerProvider {
  private readonly batch: SpanBatch;
  private readonly tracers = new Map<string, Tracer>();

  constructor(
    private readonly sdk: TracerProvider,
    ids: HandedIds,
  ) {
    this.batch = new SpanBatch(ids);
  }

  getTracer(name: string, version?: string, options?: TracerOptions): Tracer {
    const scope = `${name}@${version ?? ""}`;
    let tracer = this.tracers.get(scope);
    if (!tracer) {
      tracer = new BatchedTracer(this.sdk.getTracer(name, version, options), this.batch);
      this.tracers.set(scope, tracer);
    }
    return tracer;
  }

  flush(): void {
    this.batch.flush();
  }
}
