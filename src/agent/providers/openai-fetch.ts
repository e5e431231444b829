import { withoutLongWaits } from "./long-waits.js";
import { modelFetch } from "./model-fetch.js";
import { perMinuteExcess } from "./per-minute-limit.js";
import { isQuotaError } from "./quota.js";

/**
 * The OpenAI SDK's fetch: `modelFetch`, with a refusal that asks for a long wait not
 * retried (see long-waits.ts), and a 429 that no wait ends marked `x-should-retry: false`:
 * an exhausted quota, and one request over the per-minute token limit. OpenAI answers both with a 429 as it does a rate limit, and the SDK retries every
 * 429 unless that header says not to (its own rule, which no option changes): each retry
 * waits its back-off only to be refused again, and the person waits for it.
 */
export async function openAIFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  // An error's body is a few hundred bytes of JSON: read there once, handed on whole.
  return withoutLongWaits(
    await modelFetch(input, init),
    (status, body) => status === 429 && unretryable(body),
  );
}

function unretryable(body: string): boolean {
  let error: unknown;
  try {
    error = (JSON.parse(body) as { error?: unknown } | null)?.error;
  } catch {
    return false;
  }
  if (typeof error !== "object" || error === null) return false;
  const field = (name: string) => {
    const v = (error as Record<string, unknown>)[name];
    return typeof v === "string" ? v : undefined;
  };
  const detail = field("message") ?? "";
  const shape = { status: 429, type: field("type"), code: field("code"), detail };
  return isQuotaError(shape) || perMinuteExcess(detail) !== undefined;
}
