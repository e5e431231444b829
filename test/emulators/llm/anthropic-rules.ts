/**
 * Rules the Messages API holds a conversation to before any model runs, with the
 * message of the 400 `invalid_request_error` it answers. A client that breaks one breaks
 * every later turn of its thread, so the emulator refuses what the real API refuses.
 */

import { pixelSize } from "./image-size.js";
import { anthropicPairingRefusal } from "./tool-pairing.js";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

function blocksOf(messages: unknown[]): Json[] {
  return messages.flatMap((m) => (isObject(m) && Array.isArray(m.content) ? m.content.filter(isObject) : []));
}

/**
 * The texts of every text block, those inside a `tool_result` too: its string `content`
 * stands for one text block, and is held to the same rule ("\n" is a whole tool result at
 * times, from a shell or an MCP tool).
 */
function textsOf(blocks: Json[]): string[] {
  const text = (b: unknown) => (isObject(b) && typeof b.text === "string" ? b.text : "");
  return blocks.flatMap((b) => {
    if (b.type === "text") return [text(b)];
    if (b.type !== "tool_result") return [];
    if (typeof b.content === "string") return [b.content];
    return Array.isArray(b.content)
      ? b.content.filter((inner) => isObject(inner) && inner.type === "text").map(text)
      : [];
  });
}

/** The media types of the SDK's `Base64ImageSource`; the API refuses any other. */
const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"];
/** The API's limit on one base64 image, counted on the encoded text, not on the file it encodes. */
const MAX_IMAGE_BASE64 = 5 * 1024 * 1024;
/** Images (and document pages) one request may carry. */
const MAX_MEDIA = 100;
/** Pixels on a side, and on a side when a request has more than MANY_IMAGES images. */
const MAX_SIDE = 8000;
const MANY_IMAGES = 20;
const MANY_SIDE = 2000;

/** Each image block with the path the API names it by: in a message, or in a tool_result of one. */
function imagesOf(messages: unknown[]): Array<{ path: string; block: Json }> {
  const found: Array<{ path: string; block: Json }> = [];
  messages.forEach((m, i) => {
    if (!isObject(m) || !Array.isArray(m.content)) return;
    m.content.forEach((b, j) => {
      if (!isObject(b)) return;
      const path = `messages.${i}.content.${j}`;
      if (b.type === "image") found.push({ path, block: b });
      if (b.type === "tool_result" && Array.isArray(b.content)) {
        b.content.forEach((inner, k) => {
          if (isObject(inner) && inner.type === "image")
            found.push({ path: `${path}.tool_result.content.${k}`, block: inner });
        });
      }
    });
  });
  return found;
}

/** The 400 for an image larger on a side than the request allows, if its header says so. */
function pixelRefusal(path: string, block: Json, images: number): string | undefined {
  const source = block.source;
  if (!isObject(source) || source.type !== "base64" || typeof source.data !== "string") return undefined;
  const size = pixelSize(Buffer.from(source.data, "base64"));
  const many = images > MANY_IMAGES;
  const side = many ? MANY_SIDE : MAX_SIDE;
  if (!size || (size.width <= side && size.height <= side)) return undefined;
  const which = many ? " for many-image requests" : "";
  return `${path}.image.source.base64.data: At least one of the image dimensions exceed max allowed size${which}: ${side} pixels`;
}

function imageRefusal(path: string, block: Json): string | undefined {
  const source = block.source;
  if (!isObject(source) || source.type !== "base64") return undefined;
  if (!IMAGE_TYPES.includes(source.media_type as string)) {
    return `${path}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
  }
  // Base64 is ASCII: its characters are its bytes.
  const size = typeof source.data === "string" ? source.data.length : 0;
  if (size > MAX_IMAGE_BASE64) {
    return `${path}.image.source.base64: image exceeds 5 MB maximum: ${size} bytes > ${MAX_IMAGE_BASE64} bytes`;
  }
  return undefined;
}

/**
 * The fields the API takes on a text or an image block and on a base64 source. It refuses
 * any other ("messages.0.content.1.image.label: Extra inputs are not permitted"): a field of
 * the bot's own that leaked onto the wire would fail every turn that carries the block.
 */
const FIELDS: Record<string, string[]> = {
  text: ["type", "text", "cache_control", "citations"],
  image: ["type", "source", "cache_control"],
  base64: ["type", "media_type", "data"],
};

function extraFieldRefusal(messages: unknown[]): string | undefined {
  const extra = (path: string, kind: string, value: Json) => {
    const key = Object.keys(value).find((k) => !FIELDS[kind]?.includes(k));
    return key === undefined ? undefined : `${path}.${key}: Extra inputs are not permitted`;
  };
  for (const [i, m] of messages.entries()) {
    if (!isObject(m) || !Array.isArray(m.content)) continue;
    for (const [j, b] of m.content.entries()) {
      if (!isObject(b) || (b.type !== "text" && b.type !== "image")) continue;
      const path = `messages.${i}.content.${j}.${b.type}`;
      const refused = extra(path, b.type, b);
      if (refused) return refused;
      if (isObject(b.source) && b.source.type === "base64") {
        const inSource = extra(`${path}.source.base64`, "base64", b.source);
        if (inSource) return inSource;
      }
    }
  }
  return undefined;
}

/** The 400 message for a request whose messages break a rule, if any. */
export function anthropicMessagesRefusal(body: Json, messages: unknown[]): string | undefined {
  const blocks = blocksOf(messages);
  const tools = Array.isArray(body.tools) ? body.tools : [];
  // Even when the model is not to call any: the blocks stand for calls of defined tools.
  if (tools.length === 0 && blocks.some((b) => b.type === "tool_use" || b.type === "tool_result")) {
    return "Requests which include `tool_use` or `tool_result` blocks must define tools.";
  }
  const extra = extraFieldRefusal(messages);
  if (extra) return extra;
  const unpaired = anthropicPairingRefusal(messages);
  if (unpaired) return unpaired;
  // In any message, the user's as well as the assistant's ("\n\n" is a model's whole answer at times).
  const texts = textsOf(blocks);
  if (texts.some((t) => t === "")) return "messages: text content blocks must be non-empty";
  if (texts.some((t) => t.trim() === ""))
    return "messages: text content blocks must contain non-whitespace text";
  const images = imagesOf(messages);
  for (const { path, block } of images) {
    const refused = imageRefusal(path, block);
    if (refused) return refused;
  }
  if (images.length > MAX_MEDIA)
    return `Too much media: 0 document pages + ${images.length} images > ${MAX_MEDIA}`;
  for (const { path, block } of images) {
    const refused = pixelRefusal(path, block, images.length);
    if (refused) return refused;
  }
  return undefined;
}
