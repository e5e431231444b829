import type { WebClient } from "@slack/web-api";
import type { Artifact } from "../../core/artifacts.js";
import { type InboundFile, type StoredFile, unreadableFile } from "../../core/inbound.js";
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
  /** `file_access` for a stub, `tombstone` for a deleted file, `hidden_by_limit` past a free plan's limit. */
  mode?: string;
  /** `check_file_info` on a stub: only files.info says what the file is. */
  file_access?: string;
}

/**
 * Files on the user's message, downloadable with the bot token. Without `files:read`
 * Slack answers the download with its HTML sign-in page and status 200: that is an
 * error here, not a file.
 *
 * In a Slack Connect channel, a file shared from another organization comes as a stub
 * (`file_access: "check_file_info"`), without name, type or URL: files.info (scope
 * `files:read`) says the rest, asked here before the turn so its record can keep the URL.
 * A file Slack will not describe or serve is still named to the model, with why, so that
 * it never answers as if there were no file, or as if it had read it. `describe` stands
 * in for files.info where the caller bounds the lookups (a thread's history).
 */
export async function messageFiles(
  files: SlackFile[] | undefined,
  token: string,
  reads: WebClient,
  describe: (stub: SlackFile) => Promise<SlackFile | string> = (stub) => describeStub(reads, stub),
): Promise<InboundFile[]> {
  return Promise.all(
    (files ?? []).map(async (f) => {
      if (!isStub(f)) return inboundFile(f, token);
      const info = await describe(f);
      return typeof info === "string" ? unreadableFile(f.id ?? "file", info) : inboundFile(info, token);
    }),
  );
}

/** A file another organization shared in a Slack Connect channel: only files.info says what it is. */
export function isStub(f: SlackFile): boolean {
  return f.file_access === "check_file_info";
}

function inboundFile(f: SlackFile, token: string): InboundFile {
  const url = f.url_private_download ?? f.url_private;
  const name = f.name ?? f.title ?? f.id ?? "file";
  if (!url)
    return unreadableFile(
      name,
      `Slack did not give me this file (${f.mode ?? "no address"}), so it could not be read`,
    );
  return slackFile(
    { name, mimeType: f.mimetype || "application/octet-stream", size: f.size ?? 0, url },
    token,
  );
}

/** The file as files.info describes it, or why Slack would not. */
export async function describeStub(reads: WebClient, stub: SlackFile): Promise<SlackFile | string> {
  const id = stub.id ?? "";
  try {
    const res = await reads.files.info({ file: id });
    if (res.file) return res.file as SlackFile;
    return "Slack would not say what this file is, so it could not be read";
  } catch (err) {
    log.warn(
      { err, file: id },
      "files.info refused a Slack Connect file; the model is told it could not be read",
    );
    const code = (err as { data?: { error?: string } }).data?.error ?? "no answer";
    return `Slack would not say what this file is (${code}), so it could not be read`;
  }
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
