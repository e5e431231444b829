import { randomBytes } from "node:crypto";
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

/** When the process's monotonic clock started: fixed, where `performance.timeOrigin` is a getter into Node's internals each time. */
const TIME_ORIGIN = performance.timeOrigin;

/** Milliseconds since the epoch with the monotonic clock's precision, as the SDK takes them. */
function now(): number {
  return TIME_ORIGIN + performance.now();
}

/*
 * Span and trace ids: random bytes from the OS 4 KiB at a time, turned into hex in one
 * call, each id a slice of that hex. A slice of 13 characters or more is V8's sliced
 * string, a view that copies nothing; it keeps its 8 KiB string alive while it lives,
 * and ids live as long as their spans (seconds) or are copied when logged or stored. In
 * the tracing benchmark's V8 profiles, turning each id into hex on its own (a call into
 * Node for 8 or 16 bytes) was about a tenth of tracing's time.
 */
const ID_POOL_BYTES = 4096;
let idHex = "";
let idAt = 0;
const ZERO_ID = { 8: "0".repeat(16), 16: "0".repeat(32) } as const;

/** `bytes` random bytes (8 or 16) in hex, never all zero (W3C's span and trace ids). */
export function randomId(bytes: 8 | 16): string {
  const chars = bytes * 2;
  for (;;) {
    if (idAt + chars > idHex.length) {
      idHex = randomBytes(ID_POOL_BYTES).toString("hex");
      idAt = 0;
    }
    const id = idHex.slice(idAt, idAt + chars);
    idAt += chars;
    if (id !== ZERO_ID[bytes]) return id;
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
 * The prototype of the attributes object made for a reader: it has no keys, not even
 * Object's, so a key such as "constructor" is the span's own.
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
  /**
   * The attributes, key and value in turn. Spans of every kind set different keys: as an
   * object's properties they made V8's stores megamorphic (the slowest of its paths), and
   * setting attributes was the largest part of tracing's time in the benchmark's profiles.
   * The encoder reads these pairs; other readers get `attributes`.
   */
  readonly attributePairs: Array<string | AttributeValue> = [];
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

  /** The attributes as the SDK's span holds them, made for a reader other than the encoder. */
  get attributes(): Attributes {
    const attributes: Attributes = Object.create(NO_KEYS);
    const pairs = this.attributePairs;
    for (let i = 0; i < pairs.length; i += 2) attributes[pairs[i] as string] = pairs[i + 1] as AttributeValue;
    return attributes;
  }

  /** Kept as the SDK keeps it: a valid value, within the count limit (a new key past it is dropped). */
  setAttribute(key: string, value: AttributeValue): this {
    if (this.endMs !== 0) return this;
    const kind = typeof value;
    // Strings, numbers and booleans (nearly every value) are kept without the array check.
    if (kind !== "string" && kind !== "number" && kind !== "boolean" && !isKept(value)) return this;
    const pairs = this.attributePairs;
    for (let i = 0; i < pairs.length; i += 2)
      if (pairs[i] === key) {
        pairs[i + 1] = value;
        return this;
      }
    if (pairs.length < 2 * ATTRIBUTE_COUNT_LIMIT) pairs.push(key, value);
    else this.droppedAttributesCount++;
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
  if (typeof t === "number") return t < performance.now() + 1 ? TIME_ORIGIN + t : t;
  if (t instanceof Date) return t.getTime();
  return t[0] * 1000 + t[1] / 1e6;
}
