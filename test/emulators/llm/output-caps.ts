import { contextWindowOf, requestedOutput } from "./context.js";
import type { RecordedRequest } from "./types.js";

/**
 * Each model's own cap on output tokens, by model id (exact id, else the longest matching
 * prefix): both APIs refuse a `max_tokens` (or `max_completion_tokens`) above it, however
 * much room the context window has. The figures are those of `src/agent/model-limits.ts`,
 * kept here on purpose so the server's side does not borrow the bot's table. Its `claude-`
 * catch-all is a guess for Claude models it does not know, not a cap: a model matched by
 * nothing here is unchecked, as a new model with a larger cap would be.
 */
export const DEFAULT_OUTPUT_CAPS: Readonly<Record<string, number>> = {
  "gpt-5-chat": 16_384,
  "gpt-5": 128_000,
  "gpt-4.1": 32_768,
  "gpt-4o": 16_384,
  "chatgpt-4o": 16_384,
  "gpt-4-turbo": 4_096,
  "gpt-4": 4_096,
  "gpt-3.5-turbo": 4_096,
  "gpt-oss": 32_768,
  o1: 100_000,
  o3: 100_000,
  o4: 100_000,
  "claude-opus-4": 32_000,
  "claude-sonnet-4": 64_000,
  "claude-haiku-4": 64_000,
  "claude-3-7-sonnet": 64_000,
  "claude-3-5-sonnet": 8_192,
  "claude-3-5-haiku": 8_192,
  "claude-3": 4_096,
};

/** The output cap of `model`, or undefined for a model the table does not know. */
export function outputCapOf(model: string, caps: Readonly<Record<string, number>>): number | undefined {
  const cap = contextWindowOf(model, caps, Number.NaN);
  return Number.isNaN(cap) ? undefined : cap;
}

/** What each API answers a request for more output than its model may write. */
export interface OutputCapRefusal {
  message: string;
  param: string | null;
}

/**
 * OpenAI names the parameter the request used ("max_tokens is too large: 20000. This
 * model supports at most 16384 completion tokens, whereas you provided 20000.", code
 * `invalid_value`); Anthropic answers "max_tokens: 100000 > 64000, which is the maximum
 * allowed number of output tokens for <model>".
 */
export function outputCapRefusal(
  req: RecordedRequest,
  caps: Readonly<Record<string, number>>,
): OutputCapRefusal | undefined {
  const cap = outputCapOf(req.model, caps);
  const asked = requestedOutput(req);
  if (cap === undefined || asked === undefined || asked <= cap) return undefined;
  if (req.protocol === "anthropic") {
    return {
      message: `max_tokens: ${asked} > ${cap}, which is the maximum allowed number of output tokens for ${req.model}`,
      param: null,
    };
  }
  const param = typeof req.body.max_completion_tokens === "number" ? "max_completion_tokens" : "max_tokens";
  return {
    message: `${param} is too large: ${asked}. This model supports at most ${cap} completion tokens, whereas you provided ${asked}.`,
    param,
  };
}
