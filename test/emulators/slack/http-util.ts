import type { IncomingMessage, ServerResponse } from "node:http";

export type Params = Record<string, unknown>;

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Web API arguments arrive form-encoded (objects JSON-stringified per field, as the
 * WebClient sends them), as JSON, or as multipart (binary uploads). Form fields that hold
 * JSON arrays or objects are decoded so handlers see one shape.
 */
export async function parseParams(req: IncomingMessage, body: Buffer): Promise<Params> {
  const type = req.headers["content-type"] ?? "";
  if (type.includes("application/json")) {
    const parsed: unknown = body.length ? JSON.parse(body.toString("utf8")) : {};
    return parsed && typeof parsed === "object" ? (parsed as Params) : {};
  }
  if (type.includes("multipart/form-data")) {
    const form = await new Request("http://emulator/", {
      method: "POST",
      headers: { "content-type": type },
      body,
    }).formData();
    const out: Params = {};
    for (const [key, value] of form.entries()) {
      out[key] = typeof value === "string" ? decodeField(value) : new Uint8Array(await value.arrayBuffer());
    }
    return out;
  }
  const out: Params = {};
  for (const [key, value] of new URLSearchParams(body.toString("utf8"))) out[key] = decodeField(value);
  return out;
}

function decodeField(value: string): unknown {
  const first = value.trimStart()[0];
  if (first === "[" || first === "{") {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function str(params: Params, key: string): string | undefined {
  const v = params[key];
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return undefined;
}

export function bearer(req: IncomingMessage, params: Params): string | undefined {
  const auth = req.headers.authorization;
  if (auth?.startsWith("Bearer ")) return auth.slice("Bearer ".length).trim();
  return str(params, "token");
}

/** A boolean argument as the WebClient sends it ("true", or 1 from other clients). */
export function bool(params: Params, key: string): boolean {
  const v = str(params, key);
  return v === "true" || v === "1";
}
