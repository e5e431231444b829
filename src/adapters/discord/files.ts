import type { Attachment, Collection } from "discord.js";
import type { Artifact } from "../../core/artifacts.js";
import type { InboundFile, StoredFile } from "../../core/inbound.js";
import { formatBytes } from "../../mcp/results.js";
import { withTimeout } from "../../signals.js";

/** A download that takes longer than this is given up, so a stalled CDN cannot hold a turn. */
export const DOWNLOAD_TIMEOUT_MS = 30_000;

/** Discord's per-message attachment count. */
export const FILES_PER_MESSAGE = 10;
/** Discord's per-request upload size (all files of one message together). */
export const BYTES_PER_REQUEST = 25 * 1024 * 1024;

export interface UploadPlan<T> {
  /** Groups of files, each small enough for one message. */
  batches: T[][];
  /** Files over the per-file limit: said in a sentence instead. */
  tooLarge: T[];
}

/** Packs files into messages of at most 10 files and 25 MiB; files over `maxFileBytes` are set aside. */
export function planUploads<T>(
  items: readonly T[],
  maxFileBytes: number,
  sizeOf: (item: T) => number,
): UploadPlan<T> {
  const batches: T[][] = [];
  const tooLarge: T[] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (size > maxFileBytes) {
      tooLarge.push(item);
      continue;
    }
    if (current.length === FILES_PER_MESSAGE || (current.length > 0 && bytes + size > BYTES_PER_REQUEST)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return { batches, tooLarge };
}

export function tooLargeSentence(a: Artifact, maxFileBytes: number): string {
  return `I made ${a.filename} (${formatBytes(a.bytes.length)}), but Discord only takes files up to ${formatBytes(maxFileBytes)} here, so I could not attach it.`;
}

/** Incoming attachments as the dispatcher reads them; bytes are fetched only when needed. */
export function inboundFiles(attachments: Collection<string, Attachment>): InboundFile[] {
  return [...attachments.values()].map((a) =>
    discordFile({ name: a.name, mimeType: a.contentType ?? guessType(a.name), size: a.size, url: a.url }),
  );
}

/** A Discord attachment fetched from its CDN link (also one another process stored). */
export function discordFile(file: StoredFile): InboundFile {
  return {
    ...file,
    async fetch(signal?: AbortSignal) {
      // Attachment URLs are signed CDN links that need no bot token.
      const res = await fetch(file.url, { signal: withTimeout(DOWNLOAD_TIMEOUT_MS, signal) });
      if (!res.ok) throw new Error(`Downloading ${file.name} failed with HTTP ${res.status}`);
      return new Uint8Array(await res.arrayBuffer());
    },
  };
}

function guessType(name: string): string {
  const ext = name.toLowerCase().split(".").pop() ?? "";
  const types: Record<string, string> = {
    png: "image/png",
    jpg: "image/jpeg",
    jpeg: "image/jpeg",
    gif: "image/gif",
    webp: "image/webp",
    txt: "text/plain",
    md: "text/markdown",
    json: "application/json",
    csv: "text/csv",
  };
  return types[ext] ?? "application/octet-stream";
}
