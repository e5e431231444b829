import type { Attributes, Link, SpanContext } from "@opentelemetry/api";
import type { Resource } from "@opentelemetry/resources";
import type { ReadableSpan, TimedEvent } from "@opentelemetry/sdk-trace-node";
import { FIXED32, FIXED64, LENGTH_DELIMITED, ProtoWriter, VARINT } from "./proto-writer.js";
import { RecordedSpan } from "./recorded-span.js";

/*
 * OTLP's ExportTraceServiceRequest in protobuf, written from finished spans in one pass
 * with Node's native string and hex writers: the same bytes as OpenTelemetry's own
 * serializer (@opentelemetry/otlp-transformer, whose field order and presence rules this
 * follows; a test compares the two), which the library's HTTP exporter still sends.
 *
 * Why not the library's: it writes each batch twice (a pass that sizes it, then the pass
 * that writes) and copies every string a character at a time in JavaScript. The bot
 * exports a batch every second or two, too rarely for V8 to keep that code optimized, and
 * in the tracing benchmark's bots it took about 57 µs of CPU a span (this encoder: 15-16;
 * the library's in a warmed-up loop: 4): serialization alone was about 3 % of a turn's
 * CPU, more than tracing's whole budget. The wire format itself is ops/proto-writer.ts.
 */

/** Span.flags: the W3C trace flags, and that whether the parent is remote is known. */
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;
const MIN_INT64 = -(2 ** 63);
const MAX_INT64 = 2 ** 63;

function writeAnyValue(w: ProtoWriter, value: unknown): void {
  switch (typeof value) {
    case "string":
      w.tag(1, LENGTH_DELIMITED);
      w.string(value);
      return;
    case "boolean":
      w.tag(2, VARINT);
      w.varint32(value ? 1 : 0);
      return;
    case "number":
      // An integer within int64 is an int_value, whatever its size; anything else a double.
      if (Number.isInteger(value) && value >= MIN_INT64 && value < MAX_INT64) {
        w.tag(3, VARINT);
        w.varint64(value);
      } else {
        w.tag(4, FIXED64);
        w.double(value);
      }
      return;
  }
  if (value instanceof Uint8Array) {
    w.tag(7, LENGTH_DELIMITED);
    w.bytes(value);
  } else if (Array.isArray(value)) {
    w.tag(5, LENGTH_DELIMITED);
    const array = w.open();
    for (const item of value) {
      w.tag(1, LENGTH_DELIMITED);
      const at = w.open();
      writeAnyValue(w, item);
      w.close(at);
    }
    w.close(array);
  } else if (typeof value === "object" && value !== null) {
    w.tag(6, LENGTH_DELIMITED);
    const list = w.open();
    writeAttributes(w, value as Attributes, 1);
    w.close(list);
  }
}

/** One attribute as a KeyValue in field `field`. */
function writeKeyValue(w: ProtoWriter, field: number, key: string, value: unknown): void {
  w.tag(field, LENGTH_DELIMITED);
  const pair = w.open();
  w.tag(1, LENGTH_DELIMITED);
  w.string(key);
  w.tag(2, LENGTH_DELIMITED);
  const at = w.open();
  writeAnyValue(w, value);
  w.close(at);
  w.close(pair);
}

/** Attributes as repeated KeyValue in field `field`. */
function writeAttributes(w: ProtoWriter, attributes: Attributes, field: number): void {
  for (const key in attributes)
    if (Object.hasOwn(attributes, key)) writeKeyValue(w, field, key, attributes[key]);
}

/** Attributes given as key and value in turn (a recorded span's), as repeated KeyValue in field `field`. */
function writeAttributePairs(w: ProtoWriter, pairs: ReadonlyArray<unknown>, field: number): void {
  for (let i = 0; i < pairs.length; i += 2) writeKeyValue(w, field, pairs[i] as string, pairs[i + 1]);
}

function writeEvent(w: ProtoWriter, event: TimedEvent): void {
  w.tag(11, LENGTH_DELIMITED);
  const at = w.open();
  w.tag(1, FIXED64);
  w.time(event.time);
  w.tag(2, LENGTH_DELIMITED);
  w.string(event.name);
  if (event.attributes) writeAttributes(w, event.attributes, 3);
  w.tag(4, VARINT);
  w.varint32(event.droppedAttributesCount ?? 0);
  w.close(at);
}

function writeLink(w: ProtoWriter, link: Link): void {
  w.tag(13, LENGTH_DELIMITED);
  const at = w.open();
  const { context } = link;
  writeIds(w, context);
  if (link.attributes) writeAttributes(w, link.attributes, 4);
  w.tag(5, VARINT);
  w.varint32(link.droppedAttributesCount ?? 0);
  w.tag(6, FIXED32);
  w.fixed32(spanFlags(context.traceFlags, context.isRemote));
  w.close(at);
}

/** A span's or a link's first three fields: trace id, span id and trace state. */
function writeIds(w: ProtoWriter, context: SpanContext): void {
  w.tag(1, LENGTH_DELIMITED);
  w.hexBytes(context.traceId);
  w.tag(2, LENGTH_DELIMITED);
  w.hexBytes(context.spanId);
  const state = context.traceState?.serialize();
  if (state) {
    w.tag(3, LENGTH_DELIMITED);
    w.string(state);
  }
}

function spanFlags(traceFlags: number, remote: boolean | undefined): number {
  return (traceFlags & 0xff) | HAS_IS_REMOTE | (remote ? IS_REMOTE : 0);
}

function writeSpan(w: ProtoWriter, span: ReadableSpan): void {
  w.tag(2, LENGTH_DELIMITED);
  const at = w.open();
  const context = span.spanContext();
  const parent = span.parentSpanContext;
  writeIds(w, context);
  if (parent?.spanId) {
    w.tag(4, LENGTH_DELIMITED);
    w.hexBytes(parent.spanId);
  }
  w.tag(5, LENGTH_DELIMITED);
  w.string(span.name);
  // OTLP's kinds start at 1: 0 is "unspecified", which the API has no word for.
  if (span.kind != null) {
    w.tag(6, VARINT);
    w.varint32(span.kind + 1);
  }
  w.tag(7, FIXED64);
  w.time(span.startTime);
  w.tag(8, FIXED64);
  w.time(span.endTime);
  // A recorded span's pairs are read as they are: its `attributes` would make an object.
  if (span instanceof RecordedSpan) writeAttributePairs(w, span.attributePairs, 9);
  else writeAttributes(w, span.attributes, 9);
  w.tag(10, VARINT);
  w.varint32(span.droppedAttributesCount);
  for (const event of span.events) writeEvent(w, event);
  w.tag(12, VARINT);
  w.varint32(span.droppedEventsCount);
  for (const link of span.links) writeLink(w, link);
  w.tag(14, VARINT);
  w.varint32(span.droppedLinksCount);
  w.tag(15, LENGTH_DELIMITED);
  const status = w.open();
  if (span.status.message) {
    w.tag(2, LENGTH_DELIMITED);
    w.string(span.status.message);
  }
  w.tag(3, VARINT);
  w.varint32(span.status.code);
  w.close(status);
  w.tag(16, FIXED32);
  w.fixed32(spanFlags(context.traceFlags, parent?.isRemote));
  w.close(at);
}

function writeScopeSpans(w: ProtoWriter, spans: ReadableSpan[]): void {
  const scope = (spans[0] as ReadableSpan).instrumentationScope;
  w.tag(2, LENGTH_DELIMITED);
  const at = w.open();
  w.tag(1, LENGTH_DELIMITED);
  const scopeAt = w.open();
  w.tag(1, LENGTH_DELIMITED);
  w.string(scope.name);
  if (scope.version) {
    w.tag(2, LENGTH_DELIMITED);
    w.string(scope.version);
  }
  // The SDK's scope type has no attributes yet; the library writes them when one has.
  const { attributes, droppedAttributesCount } = scope as {
    attributes?: Attributes;
    droppedAttributesCount?: number;
  };
  if (attributes) writeAttributes(w, attributes, 3);
  if (droppedAttributesCount) {
    w.tag(4, VARINT);
    w.varint32(droppedAttributesCount);
  }
  w.close(scopeAt);
  for (const span of spans) writeSpan(w, span);
  if (scope.schemaUrl) {
    w.tag(3, LENGTH_DELIMITED);
    w.string(scope.schemaUrl);
  }
  w.close(at);
}

function writeResourceSpans(w: ProtoWriter, resource: Resource, scopes: Map<unknown, ReadableSpan[]>): void {
  w.tag(1, LENGTH_DELIMITED);
  const at = w.open();
  w.tag(1, LENGTH_DELIMITED);
  const resourceAt = w.open();
  if (resource.attributes) writeAttributes(w, resource.attributes, 1);
  w.tag(2, VARINT);
  w.varint32(0);
  w.close(resourceAt);
  for (const spans of scopes.values()) writeScopeSpans(w, spans);
  if (resource.schemaUrl) {
    w.tag(3, LENGTH_DELIMITED);
    w.string(resource.schemaUrl);
  }
  w.close(at);
}

/** One writer for the process: exports are encoded one at a time, on the main thread. */
const writer = new ProtoWriter();

/** Finished spans as one ExportTraceServiceRequest, grouped by resource and scope (by identity, as the SDK shares them). */
export function encodeTraceRequest(spans: ReadableSpan[]): Uint8Array {
  const resources = new Map<Resource, Map<unknown, ReadableSpan[]>>();
  for (const span of spans) {
    let scopes = resources.get(span.resource);
    if (!scopes) {
      scopes = new Map();
      resources.set(span.resource, scopes);
    }
    const group = scopes.get(span.instrumentationScope);
    if (group) group.push(span);
    else scopes.set(span.instrumentationScope, [span]);
  }
  writer.reset();
  for (const [resource, scopes] of resources) writeResourceSpans(writer, resource, scopes);
  return writer.take();
}
