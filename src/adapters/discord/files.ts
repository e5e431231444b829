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

/** Discord's upload limit in DMs and unboosted guilds. */
const DEFAULT_FILE_BYTES = 10 * 1024 * 1024;
/** By boost tier: tier 1 keeps the default, tiers 2 and 3 take 50 and 100 MiB. */
const TIER_FILE_BYTES = [DEFAULT_FILE_BYTES, DEFAULT_FILE_BYTES, 50 * 1024 * 1024, 100 * 1024 * 1024];

/** A guild's upload limit by its boosts; a DM (no guild) has the default. */
export function guildFileLimit(guild: { premiumTier: number } | null | undefined): number {
  return TIER_FILE_BYTES[guild?.premiumTier ?? 0] ?? DEFAULT_FILE_BYTES;
}

/**
 * The limit files are planned against: the place's own where Discord tells it (an
 * interaction's `attachment_size_limit`, a guild's boosts), else the configured one. A
 * configured limit below Discord's default is the operator's cap and still holds; the
 * default itself would tell a boosted guild "only 10 MB" of a file it takes.
 */
export function uploadLimit(configured: number, place: number | undefined): number {
  if (place === undefined || place <= 0) return configured;
  return configured < DEFAULT_FILE_BYTES ? Math.min(configured, place) : place;
}

/** `limit`: what the place takes, when known; without it, Discord refused the file as too large. */
export function tooLargeSentence(a: Artifact, limit?: number): string {
  const why =
    limit === undefined
      ? "Discord would not take a file that large here"
      : `Discord only takes files up to ${formatBytes(limit)} here`;
  return `I made ${a.filename} (${formatBytes(a.bytes.length)}), but ${why}, so I could not attach it.`;
}

/** Files Discord refused for want of the Attach Files permission (50013). */
export function noAttachSentence(files: readonly Artifact[]): string {
  return `I made ${names(files)}, but I may not attach files here. Ask a server admin to give me the Attach Files permission in this channel, then ask again.`;
}

/** Files whose upload failed otherwise; `timedOut`: Discord did not answer, so they may be there after all. */
export function notUploadedSentence(files: readonly Artifact[], timedOut: boolean): string {
  return timedOut
    ? `I could not upload ${names(files)}: Discord did not answer in time. If ${files.length > 1 ? "they are" : "it is"} not above, ask me again.`
    : `I could not upload ${names(files)}: Discord did not take ${files.length > 1 ? "them" : "it"}. Ask me again in a moment.`;
}

function names(files: readonly Artifact[]): string {
  const all = files.map((f) => f.filename);
  return all.length > 1 ? `${all.slice(0, -1).join(", ")} and ${all.at(-1)}` : (all[0] ?? "a file");
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
