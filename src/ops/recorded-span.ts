import { randomFillSync } from "node:crypto";
import {
  type Attributes,
  type AttributeValue,
  type Exception,
  type HrTime,
  type Link,
  type Span,
  type SpanContext,
  SpanKind,
  type SpanOptions,
  type SpanStatus,
  SpanStatusCode,
  type TimeInput,
  TraceFlags,
  type TraceState,
} from "@opentelemetry/api";
import { isAttributeValue, millisToHrTime, sanitizeAttributes } from "@opentelemetry/core";
import type { Resource } from "@opentelemetry/resources";
import type { ReadableSpan, TimedEvent } from "@opentelemetry/sdk-trace-node";
import {
  ATTR_EXCEPTION_MESSAGE,
  ATTR_EXCEPTION_STACKTRACE,
  ATTR_EXCEPTION_TYPE,
} from "@opentelemetry/semantic-conventions";

/*
 * A span kept as plain data, as the SDK's processor and exporters read a finished one
 * (ops/batched-tracer.ts says why): its ids, times, attributes within the SDK's limit,
 * events and status.
 */
/** OpenTelemetry's default limit of attributes per span (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT). */
const ATTRIBUTE_COUNT_LIMIT = 128;

/** Milliseconds since the epoch with the monotonic clock's precision, as the SDK takes them. */
function now(): number {
  return performance.timeOrigin + performance.now();
}

/** Random bytes for span and trace ids, drawn from the OS a few kilobytes at a time. */
const idPool = Buffer.alloc(8 * 512);
let idAt = idPool.length;

/** `bytes` random bytes (8 or 16) in hex, never all zero (W3C's span and trace ids). */
export function randomId(bytes: 8 | 16): string {
  for (;;) {
    if (idAt + bytes > idPool.length) {
      randomFillSync(idPool);
      idAt = 0;
    }
    const at = idAt;
    idAt += bytes;
    // Zero is checked a word at a time: reading 64 bits at once would make a BigInt.
    let any = 0;
    for (let i = at; i < at + bytes; i += 4) any |= idPool.readUInt32LE(i);
    if (any !== 0) return idPool.toString("hex", at, at + bytes);
  }
}

/** A value the SDK's Span keeps: its attribute check, without the empty values it drops first. */
function isKept(value: unknown): value is AttributeValue {
  return value !== null && value !== undefined && isAttributeValue(value);
}

/** The SDK's event for a recorded exception (exception.type, .message, .stacktrace). */
function exceptionEvent(exception: Exception, time: number): TimedEvent | undefined {
  const attributes: Attributes = {};
  if (typeof exception === "string") attributes[ATTR_EXCEPTION_MESSAGE] = exception;
  else if (exception) {
    if (exception.code) attributes[ATTR_EXCEPTION_TYPE] = exception.code.toString();
    else if (exception.name) attributes[ATTR_EXCEPTION_TYPE] = exception.name;
    if (exception.message) attributes[ATTR_EXCEPTION_MESSAGE] = exception.message;
    if (exception.stack) attributes[ATTR_EXCEPTION_STACKTRACE] = exception.stack;
  }
  if (!attributes[ATTR_EXCEPTION_TYPE] && !attributes[ATTR_EXCEPTION_MESSAGE]) return undefined;
  return { name: "exception", attributes, time: millisToHrTime(time) };
}

type Event =
  | { exception: Exception; time: number }
  | { name: string; attributes: Attributes | undefined; time: number };

export type InstrumentationScope = ReadableSpan["instrumentationScope"];

/** Where a span goes when it ends, and what it says of where it comes from. */
export interface SpanOrigin {
  sink: { batch: { add(span: RecordedSpan): void }; resource: Resource };
  /** The tracer's name and version, one object shared by its spans. */
  instrumentation: InstrumentationScope;
}

/** No events: one array shared by every span without any (the exporter only reads it). */
const NO_EVENTS: TimedEvent[] = [];
/** No links: one array shared by every span without any (only ever replaced, never changed). */
export const NO_LINKS: Link[] = [];
const UNSET: SpanStatus = { code: SpanStatusCode.UNSET };
/**
 * The prototype of every span's attributes: it has no keys, not even Object's. An object
 * made by Object.create(null) is a hash table in V8; one with a prototype keeps a fast
 * shape, quicker to fill and to read for export.
 */
const NO_KEYS: object = Object.freeze(Object.create(null));

/**
 * A span under a sampled parent, kept as data until its batch goes to the SDK; once
 * ended it is itself the finished span the processor exports (times turned into the
 * SDK's form only when the exporter reads them), so ending it makes no second object.
 */
export class RecordedSpan implements Span, ReadableSpan {
  private readonly context: SpanContext;
  private readonly startMs: number;
  /** Milliseconds since the epoch; 0 while the span is open. */
  private endMs = 0;
  /** No inherited keys: a key such as "constructor" is the span's own, new until set. */
  readonly attributes: Attributes = Object.create(NO_KEYS);
  /** Attributes kept, for the limit. */
  private count = 0;
  droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  readonly kind: SpanKind;
  links: Link[] = NO_LINKS;
  status: SpanStatus = UNSET;
  private noted: Event[] | undefined;

  /** `parentSpanContext`: undefined for a trace's root. */
  constructor(
    private readonly scope: SpanOrigin,
    public name: string,
    options: SpanOptions,
    readonly parentSpanContext: SpanContext | undefined,
    traceId: string,
    traceState: TraceState | undefined,
  ) {
    // One shape for every span's context, as the SDK's (traceState undefined when none).
    this.context = { traceId, spanId: randomId(8), traceFlags: TraceFlags.SAMPLED, traceState };
    this.startMs = timeOf(options.startTime);
    this.kind = options.kind ?? SpanKind.INTERNAL;
    if (options.attributes) this.setAttributes(options.attributes);
    if (options.links?.length) this.links = [...options.links];
  }

  spanContext(): SpanContext {
    return this.context;
  }

  get startTime(): HrTime {
    return millisToHrTime(this.startMs);
  }

  get endTime(): HrTime {
    return millisToHrTime(this.endMs);
  }

  get duration(): HrTime {
    return millisToHrTime(Math.max(0, this.endMs - this.startMs));
  }

  get ended(): boolean {
    return this.endMs !== 0;
  }

  get resource(): Resource {
    return this.scope.sink.resource;
  }

  get instrumentationScope(): InstrumentationScope {
    return this.scope.instrumentation;
  }

  /** The events as the SDK records them (an exception as its exception event). */
  get events(): TimedEvent[] {
    // Most spans have none; the exporter reads this twice per span (sizing, then writing).
    if (!this.noted) return NO_EVENTS;
    const events: TimedEvent[] = [];
    for (const e of this.noted) {
      const event =
        "exception" in e
          ? exceptionEvent(e.exception, e.time)
          : {
              name: e.name,
              time: millisToHrTime(e.time),
              ...(e.attributes && { attributes: sanitizeAttributes(e.attributes) }),
            };
      if (event) events.push(event);
    }
    return events;
  }

  /** Kept as the SDK keeps it: a valid value, within the count limit (a new key past it is dropped). */
  setAttribute(key: string, value: AttributeValue): this {
    if (this.endMs !== 0) return this;
    const kind = typeof value;
    // Strings, numbers and booleans (nearly every value) are kept without the array check.
    if (kind !== "string" && kind !== "number" && kind !== "boolean" && !isKept(value)) return this;
    // A kept value is never undefined, so undefined here means a new key.
    if (this.attributes[key] !== undefined) this.attributes[key] = value;
    else if (this.count < ATTRIBUTE_COUNT_LIMIT) {
      this.count++;
      this.attributes[key] = value;
    } else this.droppedAttributesCount++;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) this.setAttribute(key, attributes[key] as AttributeValue);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.endMs !== 0) return this;
    const timed = isTime(attributesOrTime);
    this.note({
      name,
      attributes: timed ? undefined : (attributesOrTime as Attributes | undefined),
      time: timeOf(timed ? attributesOrTime : time),
    });
    return this;
  }

  addLink(link: Link): this {
    if (this.endMs === 0) this.links = [...this.links, link];
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.endMs === 0) this.status = status;
    return this;
  }

  updateName(name: string): this {
    if (this.endMs === 0) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.endMs !== 0) return;
    this.endMs = timeOf(endTime);
    this.scope.sink.batch.add(this);
  }

  isRecording(): boolean {
    return this.endMs === 0;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    if (this.endMs === 0) this.note({ exception, time: timeOf(time) });
  }

  private note(event: Event): void {
    if (this.noted) this.noted.push(event);
    else this.noted = [event];
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
