import type { IncomingMessage } from "node:http";

export interface UploadedFile {
  /** The n of the `files[n]` form field. */
  index: string;
  filename: string;
  contentType: string;
  data: Buffer;
}

export interface ParsedBody {
  json: Record<string, unknown>;
  files: UploadedFile[];
  multipart: boolean;
}

export async function readRaw(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** JSON, or multipart with `payload_json` and `files[n]` parts as discord.js sends them. */
export async function parseBody(req: IncomingMessage, raw: Buffer): Promise<ParsedBody> {
  const type = req.headers["content-type"] ?? "";
  if (type.startsWith("multipart/form-data")) {
    const form = await new Response(raw, { headers: { "content-type": type } }).formData();
    const files: UploadedFile[] = [];
    let json: Record<string, unknown> = {};
    for (const [name, value] of form.entries()) {
      if (name === "payload_json" && typeof value === "string") {
        json = JSON.parse(value) as Record<string, unknown>;
        continue;
      }
      const m = /^files\[(\d+)\]$/.exec(name);
      if (m && typeof value !== "string") {
        files.push({
          index: m[1] ?? "0",
          filename: value.name,
          contentType: value.type || "application/octet-stream",
          data: Buffer.from(await value.arrayBuffer()),
        });
      }
    }
    return { json, files, multipart: true };
  }
  if (raw.length === 0) return { json: {}, files: [], multipart: false };
  return { json: JSON.parse(raw.toString("utf8")) as Record<string, unknown>, files: [], multipart: false };
}
