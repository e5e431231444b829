import type { IncomingMessage, ServerResponse } from "node:http";
import { Pace } from "./pace.js";
import { randomId, sleep } from "./script.js";

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(payload),
    "x-request-id": randomId("req_"),
    "request-id": randomId("req_"),
    ...headers,
  });
  res.end(payload);
}

/**
 * Both SDKs read `retry-after-ms` before `retry-after`. The Anthropic SDK reads a zero
 * Retry-After as "no advice" and falls back to its own 0.5 s+ back-off, so "retry now"
 * also goes out as 1 ms to keep scripted retries fast in both.
 */
export function retryHeaders(retryAfter: number | undefined): Record<string, string> {
  if (retryAfter === undefined) return {};
  return {
    "retry-after": String(retryAfter),
    "retry-after-ms": String(Math.max(1, Math.round(retryAfter * 1000))),
  };
}

/** Server-sent events onto one response, with an optional pause between content chunks. */
export class SseWriter {
  private pace: Pace | undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly delayMs: number,
  ) {
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "x-request-id": randomId("req_"),
      "request-id": randomId("req_"),
    });
    res.flushHeaders();
  }

  /** True once the client went away; writers stop instead of writing into a dead socket. */
  get gone(): boolean {
    return this.res.destroyed || this.res.writableEnded;
  }

  /** Writes one event; resolves once the bytes are handed to the socket. */
  send(data: unknown, event?: string): Promise<void> {
    if (this.gone) return Promise.resolve();
    const head = event ? `event: ${event}\n` : "";
    const payload = typeof data === "string" ? data : JSON.stringify(data);
    return new Promise((resolve) => {
      this.res.write(`${head}data: ${payload}\n\n`, () => resolve());
    });
  }

  /** Pause used between content chunks (text and tool-argument deltas), at the model's pace. */
  async pause(): Promise<void> {
    if (this.delayMs <= 0) return;
    this.pace ??= new Pace(this.delayMs);
    const wait = this.pace.next();
    if (wait > 0) await sleep(wait);
  }

  end(): void {
    if (!this.gone) this.res.end();
  }

  /** Drops the connection mid-body: no terminating chunk, so the client sees a broken stream. */
  cut(): void {
    this.res.socket?.destroy();
  }
}

/** A non-streamed body cut short: headers and the first part of the JSON, then the connection drops. */
export function cutJson(res: ServerResponse, body: unknown, afterChars: number): void {
  const payload = JSON.stringify(body);
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(payload) });
  res.write(payload.slice(0, Math.max(1, Math.min(afterChars, payload.length - 1))), () =>
    res.socket?.destroy(),
  );
}
