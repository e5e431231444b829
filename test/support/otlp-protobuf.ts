/**
 * Reads an OTLP ExportTraceServiceRequest in protobuf (OTLP/HTTP's default encoding) into
 * the shape its JSON encoding has, for the fields a test looks at: resource attributes,
 * and each span's ids, name, kind, attributes and status. Fields it does not know are
 * skipped by their wire type, as any protobuf reader does.
 */

type Json = Record<string, unknown>;

class Reader {
  private pos = 0;
  constructor(private readonly buf: Uint8Array) {}

  varint(): number {
    let result = 0;
    let scale = 1;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error("protobuf: truncated varint");
      const b = this.buf[this.pos++] as number;
      result += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return result;
      scale *= 128;
    }
  }

  bytes(): Uint8Array {
    const len = this.varint();
    if (this.pos + len > this.buf.length) throw new Error("protobuf: truncated field");
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

  string(): string {
    return text.decode(this.bytes());
  }

  /** An embedded message, read by a reader of its own. */
  message(): Reader {
    return new Reader(this.bytes());
  }

  double(): number {
    if (this.pos + 8 > this.buf.length) throw new Error("protobuf: truncated double");
    const value = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8).getFloat64(0, true);
    this.pos += 8;
    return value;
  }

  /** Calls `read` for each field; it reads the field and returns true, or returns false to skip it. */
  fields(read: (no: number) => boolean): void {
    while (this.pos < this.buf.length) {
      const tag = this.varint();
      const wireType = tag & 7;
      if (read(Math.floor(tag / 8))) continue;
      if (wireType === 0) this.varint();
      else if (wireType === 1) this.pos += 8;
      else if (wireType === 2) this.bytes();
      else if (wireType === 5) this.pos += 4;
      else throw new Error(`protobuf: wire type ${wireType} is not supported`);
    }
  }
}

const text = new TextDecoder();
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

function anyValue(r: Reader): Json {
  const out: Json = {};
  r.fields((no) => {
    if (no === 1) out.stringValue = r.string();
    else if (no === 2) out.boolValue = r.varint() !== 0;
    else if (no === 3) out.intValue = r.varint();
    else if (no === 4) out.doubleValue = r.double();
    else if (no === 5) {
      const values: Json[] = [];
      const array = r.message();
      array.fields((n) => n === 1 && values.push(anyValue(array.message())) > 0);
      out.arrayValue = { values };
    } else return false;
    return true;
  });
  return out;
}

function keyValue(r: Reader): Json {
  const out: Json = {};
  r.fields((no) => {
    if (no === 1) out.key = r.string();
    else if (no === 2) out.value = anyValue(r.message());
    else return false;
    return true;
  });
  return out;
}

function status(r: Reader): Json {
  const out: Json = {};
  r.fields((no) => {
    if (no === 2) out.message = r.string();
    else if (no === 3) out.code = r.varint();
    else return false;
    return true;
  });
  return out;
}

function span(r: Reader): Json {
  const attributes: Json[] = [];
  const out: Json = { attributes };
  r.fields((no) => {
    if (no === 1) out.traceId = hex(r.bytes());
    else if (no === 2) out.spanId = hex(r.bytes());
    else if (no === 4) {
      const parent = r.bytes();
      if (parent.length > 0) out.parentSpanId = hex(parent);
    } else if (no === 5) out.name = r.string();
    else if (no === 6) out.kind = r.varint();
    else if (no === 9) attributes.push(keyValue(r.message()));
    else if (no === 15) out.status = status(r.message());
    else return false;
    return true;
  });
  return out;
}

/** A list of embedded messages of field `no`, each read by `read`. */
function repeated(r: Reader, no: number, read: (r: Reader) => Json): Json[] {
  const out: Json[] = [];
  r.fields((n) => n === no && out.push(read(r.message())) > 0);
  return out;
}

function scopeSpans(r: Reader): Json {
  return { spans: repeated(r, 2, span) };
}

function resourceSpans(r: Reader): Json {
  const out: Json = { scopeSpans: [] };
  r.fields((no) => {
    if (no === 1) out.resource = { attributes: repeated(r.message(), 1, keyValue) };
    else if (no === 2) (out.scopeSpans as Json[]).push(scopeSpans(r.message()));
    else return false;
    return true;
  });
  return out;
}

/** The request in its JSON shape: `{ resourceSpans: [{ resource, scopeSpans: [{ spans }] }] }`. */
export function decodeTraceRequest(body: Uint8Array): Json {
  return { resourceSpans: repeated(new Reader(body), 1, resourceSpans) };
}
