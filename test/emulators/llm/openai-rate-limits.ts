import type { ServerResponse } from "node:http";
import { sendOpenAiError } from "./openai.js";

/**
 * OpenAI's tokens-per-minute limit as it holds a single request to it. The limiter counts a
 * request before any model runs: its prompt (estimated) plus the output it reserves
 * (`max_tokens` / `max_completion_tokens`). A request that alone needs more than a minute
 * allows is refused at once with a 429 `rate_limit_exceeded`, of type "tokens" like an
 * ordinary TPM limit, but worded "Request too large for ..." with no "Used" and no
 * "try again in": no wait ends it. The API sends no `x-should-retry` with it, so the SDK's
 * own rule (retry every 429) applies.
 */
export function tpmTooLargeMessage(model: string, limit: number, requested: number): string | undefined {
  if (requested <= limit) return undefined;
  return `Request too large for ${model} in organization org-emulator on tokens per min (TPM): Limit ${limit}, Requested ${requested}. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.`;
}

export function sendTpmTooLarge(res: ServerResponse, message: string, limit: number): void {
  sendOpenAiError(res, 429, message, undefined, "rate_limit_exceeded", null, {
    type: "tokens",
    headers: { "x-ratelimit-limit-tokens": String(limit) },
  });
}
