import type { ProviderName } from "./providers/provider.js";

/**
 * The image types the bot sends a model: those of the Anthropic SDK's `Base64ImageSource`,
 * the only ones the Messages API takes (it refuses any other `media_type` with a 400), and
 * the ones OpenAI's vision models read.
 */
export const IMAGE_TYPES = /^image\/(png|jpeg|gif|webp)$/;

/**
 * Anthropic refuses a base64 image whose encoded text passes 5 MiB ("image exceeds 5 MB
 * maximum: N bytes > 5242880 bytes", 400), and base64 is a third larger than the file: a
 * 4 MB phone photo is 5.3 MB of it.
 */
const ANTHROPIC_MAX_IMAGE_BASE64 = 5 * 1024 * 1024;

/**
 * The largest image file `provider` takes, in file bytes, or undefined where none is known:
 * OpenAI documents no limit on one image in Chat Completions (the SDK mentions 8 MB only for
 * images kept with stored completions), so its images are held to `attachments.maxImageBytes` alone.
 */
export function providerImageBytes(provider: ProviderName): number | undefined {
  return provider === "anthropic" ? (ANTHROPIC_MAX_IMAGE_BASE64 / 4) * 3 : undefined;
}
