import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Artifact } from "../core/artifacts.js";

export interface ModelResult {
  ok: boolean;
  text: string;
  artifacts: Artifact[];
}

export interface ResultOptions {
  maxChars: number;
  server: string;
  tool: string;
}

const EXTENSIONS: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/jpg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/svg+xml": "svg",
  "image/bmp": "bmp",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3",
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/ogg": "ogg",
  "audio/webm": "webm",
  "audio/flac": "flac",
  "audio/aac": "aac",
  "application/pdf": "pdf",
  "application/json": "json",
  "application/zip": "zip",
  "application/gzip": "gz",
  "application/x-gzip": "gz",
  "text/plain": "txt",
  "text/markdown": "md",
  "text/html": "html",
  "text/csv": "csv",
};

export function extensionFor(mimeType: string): string {
  const bare = mimeType.split(";")[0]?.trim().toLowerCase() ?? "";
  const known = EXTENSIONS[bare];
  if (known) return known;
  const sub = bare.split("/")[1]?.replace(/^x-/, "");
  return sub && /^[a-z0-9]{1,5}$/.test(sub) ? sub : "bin";
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

const safePart = (s: string) => s.replace(/[^a-zA-Z0-9._-]/g, "_");

/** Cuts at `max` without splitting a surrogate pair, and says how much was left out. */
function cap(text: string, max: number): { text: string; cut: boolean } {
  if (text.length <= max) return { text, cut: false };
  let end = Math.max(0, max);
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return { text: `${text.slice(0, end)}\n[... ${text.length - end} more characters truncated]`, cut: true };
}

/**
 * Turns an MCP tool result into what the model reads and the files the thread gets.
 * Binary content never reaches the model: it becomes an artifact and a one-line note.
 */
export function toModelResult(result: CallToolResult, opts: ResultOptions): ModelResult {
  const parts: string[] = [];
  const notes: string[] = [];
  const artifacts: Artifact[] = [];
  let hasText = false;

  /** Each attached payload's file, so that structured content repeating it names the file instead. */
  const attached = new Map<string, string>();

  const attach = (title: string, mimeType: string, base64: string) => {
    const bytes = new Uint8Array(Buffer.from(base64, "base64"));
    const filename = `${safePart(opts.server)}-${safePart(opts.tool)}-${artifacts.length + 1}.${extensionFor(mimeType)}`;
    attached.set(base64, filename);
    artifacts.push({ title, filename, mimeType, bytes });
    const note = `[Attached file: ${filename} (${mimeType}, ${formatBytes(bytes.byteLength)})]`;
    notes.push(note);
    parts.push(note);
  };

  for (const block of result.content ?? []) {
    switch (block.type) {
      case "text":
        hasText = true;
        parts.push(block.text);
        break;
      case "image":
      case "audio":
        attach(
          `${block.type === "image" ? "Image" : "Audio"} from ${opts.server}/${opts.tool}`,
          block.mimeType,
          block.data,
        );
        break;
      case "resource": {
        const r = block.resource;
        const mime = r.mimeType ?? ("blob" in r ? "application/octet-stream" : "text/plain");
        if ("blob" in r && typeof r.blob === "string") {
          attach(r.uri.split("/").pop() || r.uri, mime, r.blob);
        } else if ("text" in r && typeof r.text === "string") {
          hasText = true;
          parts.push(`[Resource ${r.uri} (${mime})]\n${r.text}`);
          // The person gets the resource too, as a file in the thread; the model reads it above.
          attach(r.uri.split("/").pop() || r.uri, mime, Buffer.from(r.text, "utf8").toString("base64"));
        }
        break;
      }
      case "resource_link": {
        const described = block.description ? `: ${block.description}` : "";
        const mime = block.mimeType ? ` (${block.mimeType})` : "";
        parts.push(`[Resource link: ${block.name} <${block.uri}>${mime}${described}]`);
        break;
      }
      default:
        parts.push(`[Content of type "${(block as { type: string }).type}" left out]`);
    }
  }

  const structured = result.structuredContent;
  // Some servers (server-filesystem's media reads) repeat their content blocks, images
  // and all, as structured content: that would be the image's base64 for the model to read.
  if (!hasText && structured !== undefined && !mirrorsContent(structured, result.content)) {
    parts.unshift(renderStructured(withoutBinary(structured, attached)));
  }
  const ok = result.isError !== true;
  if (parts.length === 0) {
    parts.push(ok ? "(the tool returned no output)" : "The tool reported an error without details.");
  }
  const capped = cap(parts.join("\n"), opts.maxChars);
  // Attachment notes cut off by the cap are put back: the model must know the files exist.
  const lost = capped.cut ? notes.filter((n) => !capped.text.includes(n)) : [];
  return { ok, text: [capped.text, ...lost].join("\n"), artifacts };
}

/** Whether structured content is only `{ content: [...] }` with the result's own content blocks. */
function mirrorsContent(structured: unknown, content: CallToolResult["content"] | undefined): boolean {
  if (!content?.length || typeof structured !== "object" || structured === null) return false;
  const keys = Object.keys(structured);
  return (
    keys.length === 1 &&
    keys[0] === "content" &&
    JSON.stringify((structured as { content: unknown }).content) === JSON.stringify(content)
  );
}

/** Base64 this long inside structured content is a file's bytes, never something to read. */
const LONG_BASE64 = /^[A-Za-z0-9+/_-]{2000,}={0,2}$/;

/** `value` with every string that is a file's bytes replaced by a line saying so. */
function withoutBinary(value: unknown, attached: ReadonlyMap<string, string>): unknown {
  if (typeof value === "string") {
    const file = attached.get(value);
    if (file) return `[binary content, attached as ${file}]`;
    return LONG_BASE64.test(value) ? `[${value.length} characters of base64 data left out]` : value;
  }
  if (Array.isArray(value)) return value.map((v) => withoutBinary(v, attached));
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutBinary(v, attached)]));
  return value;
}

/** Rows and columns a structured result is shown with as a table, at most. */
const TABLE_ROWS = 50;
const TABLE_COLUMNS = 12;

type Scalar = string | number | boolean | null;
const isScalar = (v: unknown): v is Scalar =>
  v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean";
const isFlat = (v: unknown): v is Record<string, Scalar> =>
  !!v && typeof v === "object" && !Array.isArray(v) && Object.values(v).every(isScalar);
const cell = (v: Scalar | undefined) =>
  v === undefined || v === null ? "" : String(v).replace(/\|/g, "\\|").replace(/\r?\n/g, " ");

/**
 * `structuredContent` without a text block, as the model (and, through it, the person)
 * reads it best: a list of flat records as a Markdown table, one flat record as a
 * field | value table, anything else as a JSON code block.
 */
export function renderStructured(value: unknown): string {
  const rows = Array.isArray(value) ? value : undefined;
  if (rows && rows.length > 0 && rows.every(isFlat)) {
    const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))].slice(0, TABLE_COLUMNS);
    const lines = [
      `| ${columns.map((c) => cell(c)).join(" | ")} |`,
      `| ${columns.map(() => "---").join(" | ")} |`,
      ...rows.slice(0, TABLE_ROWS).map((r) => `| ${columns.map((c) => cell(r[c])).join(" | ")} |`),
    ];
    if (rows.length > TABLE_ROWS) lines.push(`(${rows.length - TABLE_ROWS} more rows not shown)`);
    return lines.join("\n");
  }
  if (isFlat(value) && Object.keys(value).length > 0) {
    return [
      "| field | value |",
      "| --- | --- |",
      ...Object.entries(value).map(([k, v]) => `| ${cell(k)} | ${cell(v)} |`),
    ].join("\n");
  }
  return `\`\`\`json\n${JSON.stringify(value, null, 2)}\n\`\`\``;
}
