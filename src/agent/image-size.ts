/**
 * Width and height of an image from its header, for the limits a provider holds images to
 * (Anthropic refuses one over 8000 pixels on a side). Only the four types the bot sends a
 * model (IMAGE_TYPES): PNG, GIF, JPEG, WebP. Nothing is decoded beyond the header.
 */
export interface ImageSize {
  width: number;
  height: number;
}

export function imageSize(bytes: Uint8Array): ImageSize | undefined {
  return pngSize(bytes) ?? gifSize(bytes) ?? webpSize(bytes) ?? jpegSize(bytes);
}

/**
 * The size of a base64 image. A PNG, GIF or WebP header is in its first bytes; a JPEG's
 * frame header may come after tens of kilobytes of EXIF data and thumbnails, so the whole
 * image is decoded only when the first 48 KB do not say.
 */
export function base64ImageSize(data: string): ImageSize | undefined {
  const head = 65_536;
  const first = imageSize(Buffer.from(data.slice(0, head), "base64"));
  if (first || data.length <= head) return first;
  return imageSize(Buffer.from(data, "base64"));
}

const u16be = (b: Uint8Array, at: number) => ((b[at] ?? 0) << 8) | (b[at + 1] ?? 0);
const u16le = (b: Uint8Array, at: number) => (b[at] ?? 0) | ((b[at + 1] ?? 0) << 8);
const u24le = (b: Uint8Array, at: number) => u16le(b, at) | ((b[at + 2] ?? 0) << 16);
const u32be = (b: Uint8Array, at: number) => u16be(b, at) * 0x10000 + u16be(b, at + 2);
const ascii = (b: Uint8Array, at: number, text: string) =>
  [...text].every((c, i) => b[at + i] === c.charCodeAt(0));

/** The IHDR chunk comes first, right after the 8-byte signature. */
function pngSize(b: Uint8Array): ImageSize | undefined {
  if (b.length < 24 || b[0] !== 0x89 || !ascii(b, 1, "PNG") || !ascii(b, 12, "IHDR")) return undefined;
  return { width: u32be(b, 16), height: u32be(b, 20) };
}

/** The logical screen, which every frame lies within. */
function gifSize(b: Uint8Array): ImageSize | undefined {
  if (b.length < 10 || !(ascii(b, 0, "GIF87a") || ascii(b, 0, "GIF89a"))) return undefined;
  return { width: u16le(b, 6), height: u16le(b, 8) };
}

/** Lossy (VP8), lossless (VP8L) and extended (VP8X, the canvas) WebP. */
function webpSize(b: Uint8Array): ImageSize | undefined {
  if (b.length < 25 || !ascii(b, 0, "RIFF") || !ascii(b, 8, "WEBP")) return undefined;
  if (b.length < 30 && !ascii(b, 12, "VP8L")) return undefined;
  if (ascii(b, 12, "VP8 ")) return { width: u16le(b, 26) & 0x3fff, height: u16le(b, 28) & 0x3fff };
  if (ascii(b, 12, "VP8L")) {
    const bits = u16le(b, 21) + u16le(b, 23) * 0x10000;
    return { width: (bits & 0x3fff) + 1, height: (Math.floor(bits / 0x4000) & 0x3fff) + 1 };
  }
  if (ascii(b, 12, "VP8X")) return { width: u24le(b, 24) + 1, height: u24le(b, 27) + 1 };
  return undefined;
}

/** The first start-of-frame segment (SOF0-SOF15 but DHT, JPG and DAC, which share the range). */
function jpegSize(b: Uint8Array): ImageSize | undefined {
  if (b[0] !== 0xff || b[1] !== 0xd8) return undefined;
  let at = 2;
  while (at + 9 < b.length) {
    if (b[at] !== 0xff) return undefined;
    const marker = b[at + 1] ?? 0;
    // Fill bytes before a marker.
    if (marker === 0xff) {
      at++;
      continue;
    }
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { width: u16be(b, at + 7), height: u16be(b, at + 5) };
    }
    // The scan, or the end, before any frame header: not an image we can read.
    if (marker === 0xda || marker === 0xd9) return undefined;
    // Markers without a length: TEM and the restart markers.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) at += 2;
    else at += 2 + u16be(b, at + 2);
  }
  return undefined;
}
