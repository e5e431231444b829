import { IMAGE_TYPES, providerImageBytes } from "../agent/image-limits.js";
import { modelSupportsVision } from "../agent/model-limits.js";
import type { Config } from "../config.js";
import type { InboundFile } from "../core/inbound.js";
import { shownImageNote, type UserPart } from "../core/messages.js";
import { log } from "../log.js";
import { formatBytes } from "../mcp/results.js";

const TEXT_TYPES = /^(text\/|application\/(json|xml|yaml|x-yaml|toml|javascript|typescript|x-sh|sql|csv))/;
const TEXT_EXTENSIONS =
  /\.(txt|md|markdown|csv|tsv|json|ya?ml|toml|xml|html?|css|js|mjs|cjs|ts|tsx|jsx|py|rb|go|rs|java|kt|c|h|cpp|hpp|cs|php|sh|sql|log|ini|cfg|conf|env)$/i;

export interface PreparedInput {
  text: string;
  parts: UserPart[];
}

/**
 * Turns a message's files into model input: images as image parts (when the model sees
 * images), text files inline, anything else named, so the model never pretends it read it.
 */
export async function prepareAttachments(
  text: string,
  files: InboundFile[],
  opts: {
    config: Config;
    model: string;
    signal?: AbortSignal;
    /** `text` already says what each file is (a takeover): only the images are fetched again, as parts. */
    imagesOnly?: boolean;
  },
): Promise<PreparedInput> {
  const { maxTextBytes, maxImageBytes } = opts.config.attachments;
  // Inlined files share the message's size limit with what the person typed.
  let room = opts.config.agent.maxUserMessageChars - text.length;
  const notes: string[] = [];
  const parts: UserPart[] = [];
  const seesImages = modelSupportsVision(opts.config, opts.model);
  const modelRoom = providerImageBytes(opts.config.llm.provider);
  /** Past what the provider takes for one image (not the config's limit), so never sent. */
  const overModel = (bytes: number) => modelRoom !== undefined && bytes > modelRoom;
  const tooLargeForModel = (label: string) =>
    `[Attached image: ${label}; larger than the ${megabytes(modelRoom ?? 0)} this model accepts for one image, so it is not included]`;
  for (const file of files) {
    if (file.unreadable) {
      if (!opts.imagesOnly) notes.push(`[Attached file: ${file.name}; ${file.unreadable}]`);
      continue;
    }
    const label = `${file.name} (${file.mimeType}, ${formatBytes(file.size)})`;
    const isImage = IMAGE_TYPES.test(file.mimeType);
    const isText = TEXT_TYPES.test(file.mimeType) || TEXT_EXTENSIONS.test(file.name);
    const shown = isImage && seesImages && file.size <= maxImageBytes && !overModel(file.size);
    if (opts.imagesOnly && !shown) continue;
    try {
      if (shown) {
        const bytes = await file.fetch(opts.signal);
        // The size a platform reports is the file's, as it was told; the bytes are what is sent.
        if (overModel(bytes.byteLength)) {
          if (!opts.imagesOnly) notes.push(tooLargeForModel(label));
          continue;
        }
        const data = Buffer.from(bytes).toString("base64");
        parts.push({ type: "image", mimeType: file.mimeType, data, label });
        if (!opts.imagesOnly) notes.push(shownImageNote(label));
      } else if (isText && file.size <= maxTextBytes) {
        const content = new TextDecoder().decode(await file.fetch(opts.signal));
        const fits = content.slice(0, Math.max(0, room - label.length - 200));
        room -= fits.length + label.length + 200;
        const cut =
          fits.length < content.length
            ? `\n[Only the first ${fits.length} of ${content.length} characters fit.]`
            : "";
        notes.push(`[Attached file: ${label}]\n\`\`\`\n${fits}\n\`\`\`${cut}`);
      } else if (isImage && !seesImages) {
        // Not "too large": the model would tell the person to send a smaller image, in vain.
        notes.push(`[Attached image: ${label}; this model cannot see images, so it is not included]`);
      } else if (isImage && file.size <= maxImageBytes) {
        notes.push(tooLargeForModel(label));
      } else {
        const why = isText || isImage ? "too large to read" : "a type I cannot read";
        notes.push(`[Attached file: ${label}; ${why}, so its content is not included]`);
      }
    } catch (err) {
      log.warn({ err, file: file.name }, "could not download an attachment");
      notes.push(
        opts.imagesOnly
          ? `[Attached image: ${label}; it could not be downloaded again, so it is not shown to you after all]`
          : `[Attached file: ${label}; it could not be downloaded]`,
      );
    }
  }
  return { text: notes.length ? `${text}\n\n${notes.join("\n\n")}`.trim() : text, parts };
}

/** Exactly, where `formatBytes` rounds: "3.8 MB" beside a 3.8 MB photo would not say which is larger. */
function megabytes(bytes: number): string {
  return `${Number((bytes / (1024 * 1024)).toFixed(2))} MB`;
}
