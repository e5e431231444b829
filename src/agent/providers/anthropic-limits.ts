import type {
  ContentBlockParam,
  ImageBlockParam,
  MessageCreateParamsStreaming,
} from "@anthropic-ai/sdk/resources/messages";
import { leftOutImageNote, shownImageNote } from "../../core/messages.js";
import { base64ImageSize, type ImageSize } from "../image-size.js";
import type { ImageLabels } from "./anthropic-messages.js";

/**
 * What the Messages API refuses in a request besides its tokens, each a 400 (or, over the
 * size, Cloudflare's 413) that fails the whole turn, and every later one of a thread that
 * keeps the image: more than 100 images ("Too much media: 0 document pages + 103 images >
 * 100"); an image over 8000 pixels on a side, or over 2000 when the request carries more
 * than 20 ("At least one of the image dimensions exceed max allowed size for many-image
 * requests: 2000 pixels"); a body over 32 MB. Whether the docs' "32 MB" means 10^6 or 2^20
 * bytes a megabyte they do not say: the smaller is taken.
 */
const MAX_IMAGES = 100;
const MAX_SIDE = 8000;
const MANY_IMAGES = 20;
const MANY_SIDE = 2000;
const MAX_REQUEST_BYTES = 32_000_000;

type Reason = "count" | "side" | "manySide" | "bytes";

/** How many images a request left out, by why. */
export type LeftOut = Record<Reason, number> & { of: number };

interface Slot {
  content: ContentBlockParam[];
  index: number;
  block: ImageBlockParam;
  size?: ImageSize;
  label?: string;
}

/**
 * Holds `body` to those limits. The message's text names each image it sent as one shown
 * (`shownImageNote`); an image over a limit is taken out and that note rewritten to say it
 * is not shown, and why. An image the text does not name (no label) is replaced, where it
 * stood, by a text block that says so. Changes `body`'s messages in place (the provider
 * builds them afresh for every request, and the session keeps the text as it was); returns
 * what was left out, if anything.
 */
export function fitAnthropicLimits(
  body: MessageCreateParamsStreaming,
  labels: ImageLabels = new Map(),
): LeftOut | undefined {
  const slots = imageSlots(body, labels);
  if (slots.length === 0) return undefined;
  const out = new Map<Slot, Reason>();
  // The first ones are kept: images come in the order the person attached them.
  for (const slot of slots.slice(MAX_IMAGES)) out.set(slot, "count");
  const counted = slots.slice(0, MAX_IMAGES);
  for (const slot of counted) {
    const { source } = slot.block;
    if (source.type === "base64") slot.size = base64ImageSize(source.data);
  }
  const fits = counted.filter((slot) => {
    if (!over(slot.size, MAX_SIDE)) return true;
    out.set(slot, "side");
    return false;
  });
  if (fits.length > MANY_IMAGES) {
    // Every image within MANY_SIDE, and as many larger ones as keep the count at MANY_IMAGES
    // (when fewer are small): the most images any choice could keep.
    const small = fits.filter((slot) => !over(slot.size, MANY_SIDE)).length;
    let room = Math.max(0, MANY_IMAGES - small);
    for (const slot of fits) {
      if (over(slot.size, MANY_SIDE) && room-- <= 0) out.set(slot, "manySide");
    }
  }
  for (const [slot, reason] of out) leaveOut(slot, reason, slots);
  const kept = slots.filter((slot) => !out.has(slot));
  dropForBytes(body, slots, kept, out);
  if (out.size === 0) return undefined;
  const leftOut: LeftOut = { count: 0, side: 0, manySide: 0, bytes: 0, of: slots.length };
  for (const reason of out.values()) leftOut[reason]++;
  return leftOut;
}

/** The largest images first, until the body fits: the fewest left out. */
function dropForBytes(
  body: MessageCreateParamsStreaming,
  slots: Slot[],
  kept: Slot[],
  out: Map<Slot, Reason>,
): void {
  let bytes = bodyBytes(body);
  const largest = [...kept].sort((a, b) => imageBytes(b) - imageBytes(a));
  for (const slot of largest) {
    if (bytes <= MAX_REQUEST_BYTES) return;
    bytes -= leaveOut(slot, "bytes", slots);
    out.set(slot, "bytes");
  }
}

function imageSlots(body: MessageCreateParamsStreaming, labels: ImageLabels): Slot[] {
  const slots: Slot[] = [];
  for (const message of body.messages) {
    if (typeof message.content === "string") continue;
    message.content.forEach((block, index) => {
      if (block.type !== "image") return;
      const label = labels.get(block);
      slots.push({
        content: message.content as ContentBlockParam[],
        index,
        block,
        ...(label !== undefined ? { label } : {}),
      });
    });
  }
  return slots;
}

/** Unknown (a header the bot cannot read) is left to the API to judge. */
function over(size: ImageSize | undefined, side: number): boolean {
  return size !== undefined && (size.width > side || size.height > side);
}

const NOTES: Record<Reason, (size?: ImageSize) => string> = {
  count: () => `it came after the first ${MAX_IMAGES}, the most one request may carry`,
  side: (size) => `it is ${pixels(size)}, and none may be larger than ${MAX_SIDE} pixels on a side`,
  manySide: (size) =>
    `it is ${pixels(size)}, and with more than ${MANY_IMAGES} images in one request none may be larger than ${MANY_SIDE} pixels on a side`,
  bytes: () => "with it the request would have been larger than the 32 MB the API accepts",
};

/** Takes `slot`'s image out of the body, with the note that says why; returns the bytes the body lost. */
function leaveOut(slot: Slot, reason: Reason, slots: Slot[]): number {
  const why = NOTES[reason](slot.size);
  const rewritten = rewriteNote(slot, why);
  if (rewritten === undefined) {
    const note: ContentBlockParam = {
      type: "text",
      text: `[An image the person sent is left out here: ${why}.]`,
    };
    slot.content[slot.index] = note;
    return imageBytes(slot) - jsonBytes(note);
  }
  slot.content.splice(slot.index, 1);
  for (const other of slots) {
    if (other.content === slot.content && other.index > slot.index) other.index--;
  }
  // The block and the comma before it go; the note grows by what it says now.
  return imageBytes(slot) + 1 - rewritten;
}

/**
 * Rewrites the note of `slot`'s image in the nearest text block before it (its message's
 * text; an earlier message merged into the same turn may name a file of the same label);
 * returns by how many bytes that block grew, or undefined when no block names the image.
 */
function rewriteNote(slot: Slot, why: string): number | undefined {
  const { label } = slot;
  if (label === undefined) return undefined;
  const shown = shownImageNote(label);
  for (let i = slot.index - 1; i >= 0; i--) {
    const block = slot.content[i];
    if (block?.type !== "text" || !block.text.includes(shown)) continue;
    // A function, so that a "$&" in a file's name is not read as a replacement pattern.
    const text = block.text.replace(shown, () => leftOutImageNote(label, why));
    const rewritten = { ...block, text };
    slot.content[i] = rewritten;
    return jsonBytes(rewritten) - jsonBytes(block);
  }
  return undefined;
}

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

function pixels(size: ImageSize | undefined): string {
  return size ? `${size.width}x${size.height} pixels` : "too large";
}

/** An image block's bytes in the body. */
function imageBytes(slot: Slot): number {
  return jsonBytes(slot.block);
}

/**
 * The body's size as the SDK sends it (JSON), without building the one string: a hundred
 * images of 5 MB each would pass the longest string V8 makes. Base64 is ASCII, a byte a
 * character, with nothing to escape.
 */
function bodyBytes(body: MessageCreateParamsStreaming): number {
  let images = 0;
  const rest = JSON.stringify(body, function (this: unknown, key: string, value: unknown) {
    const holder = this as { type?: unknown };
    if (key === "data" && holder.type === "base64" && typeof value === "string") {
      images += value.length;
      return "";
    }
    return value;
  });
  return Buffer.byteLength(rest) + images;
}

/** The sentence the person reads after the answer: which of their images the model did not see, and why. */
export function leftOutNotice(left: LeftOut): string {
  const total = left.count + left.side + left.manySide + left.bytes;
  const are = (n: number) => (n === 1 ? "1 is" : `${n} are`);
  const why: string[] = [];
  if (left.count)
    why.push(`${left.count} came after the first ${MAX_IMAGES}, the most it takes in one request`);
  if (left.side) why.push(`${are(left.side)} larger than ${MAX_SIDE} pixels on a side, which it refuses`);
  if (left.manySide)
    why.push(
      `${are(left.manySide)} larger than ${MANY_SIDE} pixels on a side, which it refuses in a request with more than ${MANY_IMAGES} images`,
    );
  if (left.bytes) why.push(`${left.bytes} would have made the request larger than the 32 MB it accepts`);
  return `(The model did not see ${which(total, left.of)} sent with this message, because the Anthropic API limits them: ${why.join("; ")}. To have them all seen, send fewer or smaller images at a time.)`;
}

function which(left: number, of: number): string {
  if (left < of) return `${left} of the ${of} images`;
  return left === 1 ? "the image" : `any of the ${left} images`;
}
