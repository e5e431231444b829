/**
 * The emulator's own reading of an image's pixel size, for the Messages API's limits on
 * it, kept apart from Switchboard's (`src/agent/image-size.ts`) on purpose: a test that
 * sends an image checks the bot's reading from the server's side. Undefined for bytes it
 * cannot read (the API would decode the image; the emulator only reads headers).
 */
export function pixelSize(data: Buffer): { width: number; height: number } | undefined {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const tag = (at: number, length: number) => data.subarray(at, at + length).toString("latin1");
  try {
    if (tag(1, 3) === "PNG" && tag(12, 4) === "IHDR")
      return { width: view.getUint32(16), height: view.getUint32(20) };
    if (tag(0, 3) === "GIF") return { width: view.getUint16(6, true), height: view.getUint16(8, true) };
    if (tag(0, 4) === "RIFF" && tag(8, 4) === "WEBP") return webp(view, tag(12, 4));
    if (view.getUint16(0) === 0xffd8) return jpeg(view);
  } catch {
    // A header cut short (DataView's RangeError): unreadable.
  }
  return undefined;
}

function webp(view: DataView, chunk: string) {
  if (chunk === "VP8 ")
    return { width: view.getUint16(26, true) & 0x3fff, height: view.getUint16(28, true) & 0x3fff };
  if (chunk === "VP8L") {
    const bits = view.getUint32(21, true);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === "VP8X") {
    const u24 = (at: number) => view.getUint16(at, true) + (view.getUint8(at + 2) << 16);
    return { width: u24(24) + 1, height: u24(27) + 1 };
  }
  return undefined;
}

function jpeg(view: DataView) {
  for (let at = 2; at + 9 <= view.byteLength; ) {
    const marker = view.getUint16(at);
    if (marker >> 8 !== 0xff) return undefined;
    const kind = marker & 0xff;
    const isFrame = kind >= 0xc0 && kind <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(kind);
    if (isFrame) return { width: view.getUint16(at + 7), height: view.getUint16(at + 5) };
    if (kind === 0xda || kind === 0xd9) return undefined;
    at +=
      kind === 0xff ? 1 : kind === 0x01 || (kind >= 0xd0 && kind <= 0xd7) ? 2 : 2 + view.getUint16(at + 2);
  }
  return undefined;
}
