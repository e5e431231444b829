import { describe, expect, it } from "vitest";
import { ProtoWriter } from "./proto-writer.js";

/** What the writer wrote for one call, as bytes. */
function written(write: (w: ProtoWriter) => void): Buffer {
  const w = new ProtoWriter();
  write(w);
  return Buffer.from(w.take());
}

/** A length-delimited value as protobuf lays it out: its length as a varint, then its bytes. */
function delimited(bytes: Buffer): Buffer {
  const length: number[] = [];
  let v = bytes.length;
  while (v > 0x7f) {
    length.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  length.push(v);
  return Buffer.concat([Buffer.from(length), bytes]);
}

describe("ProtoWriter", () => {
  it("writes every string as its UTF-8 bytes, short or long, ASCII or not", () => {
    for (const s of [
      "",
      "gen_ai.request.model",
      "x".repeat(42),
      "x".repeat(43),
      "ship it 🚀 ✓",
      `${"a".repeat(41)}é`,
      "é".repeat(42),
      "\u0000\u007f",
      "a\u0080b",
      "x".repeat(20_000),
      "lone \ud800 surrogate",
    ])
      expect(written((w) => w.string(s))).toEqual(delimited(Buffer.from(s, "utf8")));
  });

  it("writes hex ids as their bytes, and anything that is not plain hex as Node decodes it (the API checks ids before)", () => {
    for (const hex of [
      "0af7651916cd43dd8448eb211c80319c",
      "00f067aa0ba902b7",
      "ABCDEF0123456789",
      "zz12",
      "12g4",
      "1é23",
    ])
      expect(written((w) => w.hexBytes(hex))).toEqual(
        Buffer.concat([Buffer.from([hex.length >>> 1]), Buffer.from(hex, "hex")]),
      );
  });
});
