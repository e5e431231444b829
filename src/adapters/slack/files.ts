import type { WebClient } from "@slack/web-api";
import type { Artifact } from "../../core/artifacts.js";
import type { InboundFile, StoredFile } from "../../core/inbound.js";
import { log } from "../../log.js";
import { withTimeout } from "../../signals.js";

/** A download that takes longer than this is given up, so a stalled CDN cannot hold a turn. */
export const DOWNLOAD_TIMEOUT_MS = 30_000;

/** Slack's per-file upload limit. */
export const SLACK_MAX_FILE_BYTES = 1024 * 1024 * 1024;

/** The fields of a file on a Slack message event that we use. */
export interface SlackFile {
  id?: string;
  name?: string;
  title?: string;
  mimetype?: string;
  size?: number;
  url_private?: string;
  url_private_download?: string;
}

/**
 * Files on the user's message, downloadable with the bot token. Without `files:read`
 * Slack answers the download with its HTML sign-in page and status 200: that is an
 * error here, not a file.
 */
export function toInboundFiles(files: SlackFile[] | undefined, token: string): InboundFile[] {
  return (files ?? []).flatMap((f) => {
    const url = f.url_private_download ?? f.url_private;
    if (!url) return [];
    const name = f.name ?? f.title ?? "file";
    return [
      slackFile({ name, mimeType: f.mimetype || "application/octet-stream", size: f.size ?? 0, url }, token),
    ];
  });
}

/** A Slack file fetched from its private URL with the bot token (also one another process stored). */
export function slackFile(file: StoredFile, token: string): InboundFile {
  const { name, mimeType, url } = file;
  return {
    ...file,
    async fetch(signal?: AbortSignal): Promise<Uint8Array> {
      const res = await fetch(url, {
        headers: { Authorization: `Bearer ${token}` },
        signal: withTimeout(DOWNLOAD_TIMEOUT_MS, signal),
      });
      if (!res.ok) throw new Error(`Slack file download failed with HTTP ${res.status} for ${name}`);
      const type = res.headers.get("content-type") ?? "";
      if (type.startsWith("text/html") && !mimeType.startsWith("text/html")) {
        throw new Error(
          `Slack returned a sign-in page instead of ${name} (is the files:read scope granted?)`,
        );
      }
      return new Uint8Array(await res.arrayBuffer());
    },
  };
}

export interface UploadPlace {
  channel: string;
  threadTs: string;
}

/**
 * One artifact into the thread with the 3-step external upload. Too large, or refused:
 * a sentence in the thread instead, so the turn still ends well.
 */
export async function uploadArtifact(
  web: WebClient,
  place: UploadPlace,
  artifact: Artifact,
  maxBytes = SLACK_MAX_FILE_BYTES,
): Promise<void> {
  const say = (text: string) =>
    web.chat.postMessage({ channel: place.channel, thread_ts: place.threadTs, text }).then(() => undefined);
  if (artifact.bytes.byteLength > maxBytes) {
    await say(
      `I made ${artifact.filename} (${formatSize(artifact.bytes.byteLength)}), but it is larger than Slack's ${formatSize(maxBytes)} limit for files, so I cannot attach it.`,
    );
    return;
  }
  try {
    await web.filesUploadV2({
      channel_id: place.channel,
      thread_ts: place.threadTs,
      file: Buffer.from(artifact.bytes),
      filename: artifact.filename,
      title: artifact.title,
    });
  } catch (err) {
    log.warn({ err, file: artifact.filename }, "slack upload failed");
    await say(`I could not attach ${artifact.filename}: Slack refused the upload.`);
  }
}

function formatSize(bytes: number): string {
  if (bytes >= 1024 * 1024 * 1024) return `${(bytes / 1024 / 1024 / 1024).toFixed(1)} GB`;
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return `${Math.ceil(bytes / 1024)} KB`;
}
