import type { Attachment, Collection } from "discord.js";
import type { Artifact } from "../../mcp/types.js";
import type { InboundFile } from "../types.js";

/** Discord's per-message attachment count. */
export const FILES_PER_MESSAGE = 10;
/** Discord's per-request upload size (all files of one message together). */
export const BYTES_PER_REQUEST = 25 * 1024 * 1024;

export interface UploadPlan {
  /** Groups of artifacts, each small enough for one message. */
  batches: Artifact[][];
  /** Artifacts over the per-file limit: said in a sentence instead. */
  tooLarge: Artifact[];
}

/** Packs artifacts into messages of at most 10 files and 25 MiB; files over `maxFileBytes` are set aside. */
export function planUploads(artifacts: readonly Artifact[], maxFileBytes: number): UploadPlan {
  const batches: Artifact[][] = [];
  const tooLarge: Artifact[] = [];
  let current: Artifact[] = [];
  let bytes = 0;
  for (const a of artifacts) {
    if (a.bytes.length > maxFileBytes) {
      tooLarge.push(a);
      continue;
    }
    if (
      current.length === FILES_PER_MESSAGE ||
      (current.length > 0 && bytes + a.bytes.length > BYTES_PER_REQUEST)
    ) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(a);
    bytes += a.bytes.length;
  }
  if (current.length > 0) batches.push(current);
  return { batches, tooLarge };
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} bytes`;
}

export function tooLargeSentence(a: Artifact, maxFileBytes: number): string {
  return `I made ${a.filename} (${formatBytes(a.bytes.length)}), but Discord only takes files up to ${formatBytes(maxFileBytes)} here, so I could not attach it.`;
}

/** Incoming attachments as the dispatcher reads them; bytes are fetched only when needed. */
export function inboundFiles(attachments: Collection<string, Attachment>): InboundFile[] {
  return [...attachments.values()].map((a) => ({
    name: a.name,
    mimeType: a.contentType ?? guessType(a.name),
    size: a.size,
    async fetch() {
      // Attachment URLs are signed CDN links that need no bot token.
      const res = await fetch(a.url);
      if (!res.ok) throw new Error(`Downloading ${a.name} failed with HTTP ${res.status}`);
      return new Uint8Array(await res.arrayBuffer());
    },
  }));
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
