import type { HrTime } from "@opentelemetry/api";

/*
 * Protobuf's wire format written into one growing buffer, for ops/otlp-span-encoder.ts:
 * short ASCII strings and hex copied in JavaScript, other strings through Node's native
 * writer, each nested message given one byte for its length and moved on only when it
 * needs more.
 */

/** Wire types: how a field's value is laid out after its tag. */
export const VARINT = 0;
export const FIXED64 = 1;
export const LENGTH_DELIMITED = 2;
export const FIXED32 = 5;

const TWO_TO_32 = 0x100000000;
const NANOS_PER_SECOND = 1_000_000_000;
/** The writer's buffer to begin with, and to go back to after an export that outgrew it. */
const USUAL_BYTES = 64 * 1024;
/** A buffer grown past this for one large export is let go afterwards, not kept for the process's life. */
const KEPT_BYTES = 1024 * 1024;

/** Each hex digit's value by its character code; -1 for any other character below 128. */
const HEX_DIGIT = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX_DIGIT[48 + c] = c;
for (let c = 0; c < 6; c++) {
  HEX_DIGIT[97 + c] = 10 + c;
  HEX_DIGIT[65 + c] = 10 + c;
}

/** A growing byte buffer that writes protobuf's wire format. */
export class ProtoWriter {
  private buf = Buffer.allocUnsafe(USUAL_BYTES);
  pos = 0;

  private room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + bytes) size *= 2;
    const bigger = Buffer.allocUnsafe(size);
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  /** Forgets what was written: a request that failed half-way leaves nothing behind. */
  reset(): void {
    this.pos = 0;
  }

  /** The bytes written, in a buffer of their own (the writer is reused). */
  take(): Uint8Array {
    const out = Buffer.allocUnsafeSlow(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    this.pos = 0;
    if (this.buf.length > KEPT_BYTES) this.buf = Buffer.allocUnsafe(USUAL_BYTES);
    return out;
  }

  tag(field: number, wire: number): void {
    this.varint32((field << 3) | wire);
  }

  /** An unsigned value below 2^32. */
  varint32(value: number): void {
    this.room(5);
    let v = value >>> 0;
    while (v > 0x7f) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
  }

  /** An int64 (negative ones in two's complement, ten bytes), as the library writes it. */
  varint64(value: number): void {
    if (value >= 0 && value < TWO_TO_32) {
      this.varint32(value);
      return;
    }
    this.room(10);
    let low: number;
    let high: number;
    const abs = Math.abs(value);
    low = abs >>> 0;
    high = (abs / TWO_TO_32) >>> 0;
    if (value < 0) {
      low = ~low >>> 0;
      high = ~high >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    while (high > 0 || low > 0x7f) {
      this.buf[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    this.buf[this.pos++] = low & 0x7f;
  }

  fixed32(value: number): void {
    this.room(4);
    this.pos = this.buf.writeUInt32LE(value >>> 0, this.pos);
  }

  fixed64(low: number, high: number): void {
    this.room(8);
    this.pos = this.buf.writeUInt32LE(low >>> 0, this.pos);
    this.pos = this.buf.writeUInt32LE(high >>> 0, this.pos);
  }

  double(value: number): void {
    this.room(8);
    this.pos = this.buf.writeDoubleLE(value, this.pos);
  }

  /**
   * A string field's length and UTF-8 bytes. A short ASCII string (nearly every name, key
   * and value of a span) is copied here a character at a time; anything else is written
   * by Node in one call. Node's call costs a crossing into C++ for each string, about ten a
   * span: in the bot, where a batch is encoded every second or two, that crossing was
   * most of the encoder's time.
   */
  string(value: string): void {
    const n = value.length;
    // At most three bytes per UTF-16 unit: up to 42 units fit a one-byte length.
    if (n <= 42) {
      this.room(1 + n * 3);
      const buf = this.buf;
      const start = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = value.charCodeAt(i);
        if (c >= 0x80) break;
        buf[start + i] = c;
      }
      const written = i === n ? n : buf.write(value, start, "utf8");
      buf[this.pos] = written;
      this.pos = start + written;
      return;
    }
    const bytes = Buffer.byteLength(value, "utf8");
    this.varint32(bytes);
    this.room(bytes);
    this.pos += this.buf.write(value, this.pos, "utf8");
  }

  /** A trace or span id given in hex, as its bytes: decoded here, or by Node when it is not plain hex (as before). */
  hexBytes(hex: string): void {
    const bytes = hex.length >>> 1;
    this.varint32(bytes);
    this.room(bytes);
    const buf = this.buf;
    const at = this.pos;
    for (let i = 0; i < bytes; i++) {
      const high = HEX_DIGIT[hex.charCodeAt(2 * i)] ?? -1;
      const low = HEX_DIGIT[hex.charCodeAt(2 * i + 1)] ?? -1;
      if ((high | low) < 0) {
        this.pos += buf.write(hex, at, "hex");
        return;
      }
      buf[at + i] = (high << 4) | low;
    }
    this.pos = at + bytes;
  }

  bytes(value: Uint8Array): void {
    this.varint32(value.length);
    this.room(value.length);
    this.buf.set(value, this.pos);
    this.pos += value.length;
  }

  /** Opens a nested message: one byte kept for its length, which most fit. */
  open(): number {
    this.room(1);
    return this.pos++;
  }

  /** Closes the message opened at `at`, moving it on when its length needs more bytes. */
  close(at: number): void {
    const length = this.pos - at - 1;
    if (length < 0x80) {
      this.buf[at] = length;
      return;
    }
    let size = 1;
    for (let v = length; v > 0x7f; v >>>= 7) size++;
    this.room(size - 1);
    this.buf.copy(this.buf, at + size, at + 1, this.pos);
    this.pos += size - 1;
    let v = length;
    let p = at;
    while (v > 0x7f) {
      this.buf[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[p] = v;
  }

  /** An HrTime ([seconds, nanoseconds]) as fixed64 nanoseconds, exact past 2^53. */
  time(time: HrTime): void {
    const [seconds, nanos] = time;
    // seconds * 1e9 would lose precision: its low 16 bits and the rest are multiplied apart.
    const lowPart = (seconds & 0xffff) * NANOS_PER_SECOND;
    const highPart = ((seconds / 0x10000) >>> 0) * NANOS_PER_SECOND;
    const low = (lowPart >>> 0) + (((highPart & 0xffff) * 0x10000) >>> 0) + nanos;
    const high = Math.floor(lowPart / TWO_TO_32) + ((highPart / 0x10000) >>> 0) + Math.floor(low / TWO_TO_32);
    this.fixed64(low >>> 0, high >>> 0);
  }
}
