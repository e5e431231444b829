/**
 * Image files of a given size in pixels, as headers the way each format writes them,
 * padded to `bytes` with filler after the header: what the bot and the LLM emulator read
 * of an image (its size, its bytes), without a real picture to carry around.
 */

const u16be = (n: number) => [(n >> 8) & 0xff, n & 0xff];
const u16le = (n: number) => [n & 0xff, (n >> 8) & 0xff];
const u24le = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff];
const u32be = (n: number) => [(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
const u32le = (n: number) => [...u32be(n)].reverse();
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

function padded(head: number[], bytes: number, tail: number[] = []): Buffer {
  const out = Buffer.alloc(Math.max(bytes, head.length + tail.length), 0x5a);
  out.set(head, 0);
  out.set(tail, out.length - tail.length);
  return out;
}

export function png(width: number, height: number, bytes = 0): Buffer {
  const ihdr = [...u32be(13), ...ascii("IHDR"), ...u32be(width), ...u32be(height), 8, 6, 0, 0, 0];
  return padded([0x89, ...ascii("PNG"), 0x0d, 0x0a, 0x1a, 0x0a, ...ihdr, 0, 0, 0, 0], bytes);
}

export function gif(width: number, height: number, bytes = 0): Buffer {
  return padded([...ascii("GIF89a"), ...u16le(width), ...u16le(height), 0, 0, 0], bytes, [0x3b]);
}

/**
 * A baseline JPEG's frame header after an APP1 (EXIF) segment of `exifBytes`, as a camera
 * writes one: the size is not in the first bytes.
 */
export function jpeg(width: number, height: number, exifBytes = 0): Buffer {
  const exif = exifBytes > 0 ? [0xff, 0xe1, ...u16be(exifBytes + 2), ...new Array(exifBytes).fill(0)] : [];
  const app0 = [0xff, 0xe0, ...u16be(16), ...ascii("JFIF"), 0, 1, 1, 0, 0, 1, 0, 1, 0, 0];
  // Three components (Y, Cb, Cr), each with its sampling and quantisation table.
  const components = [3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1];
  const sof = [0xff, 0xc0, ...u16be(17), 8, ...u16be(height), ...u16be(width), ...components];
  return Buffer.from([0xff, 0xd8, ...app0, ...exif, ...sof, 0xff, 0xda, 0, 2, 0xff, 0xd9]);
}

export function webp(kind: "VP8 " | "VP8L" | "VP8X", width: number, height: number): Buffer {
  let chunk: number[];
  if (kind === "VP8 ") chunk = [0, 0, 0, 0x9d, 0x01, 0x2a, ...u16le(width), ...u16le(height)];
  // 14 bits each of width - 1 and height - 1, then the alpha bit and a version of 0.
  else if (kind === "VP8L") chunk = [0x2f, ...u32le((width - 1) | ((height - 1) << 14) | (1 << 28))];
  else chunk = [0x10, 0, 0, 0, ...u24le(width - 1), ...u24le(height - 1)];
  const body = [...ascii("WEBP"), ...ascii(kind), ...u32le(chunk.length), ...chunk];
  return Buffer.from([...ascii("RIFF"), ...u32le(body.length), ...body]);
}
