import { ErrorCode } from "@slack/web-api";

/** How long a Web API 429 asks to wait, in ms; null for any other error. */
export function retryAfterMs(err: unknown): number | null {
  const e = err as { code?: string; retryAfter?: number };
  return e?.code === ErrorCode.RateLimitedError ? Math.max(0, e.retryAfter ?? 1) * 1000 : null;
}
