/**
 * Rules Chat Completions holds a request to before any model runs, with the 400
 * `invalid_request_error` it answers (message, code, param). The emulator refuses what
 * the real API refuses, so a test passes only with a request OpenAI would take.
 */

import { openAiPairingRefusal } from "./tool-pairing.js";

type Json = Record<string, unknown>;

export interface OpenAiRefusal {
  message: string;
  code: string | null;
  param: string | null;
}

/**
 * o1, o3, o4-mini and the gpt-5 family; gpt-5-chat is the non-reasoning model ChatGPT
 * uses, left to the rules of the others.
 */
const REASONING = /^(o[1-9]|gpt-5(?!-chat))/;

/** Reasoning models take `max_completion_tokens` only, and only their default temperature (1). */
function reasoningRefusal(body: Json): OpenAiRefusal | undefined {
  if (typeof body.model !== "string" || !REASONING.test(body.model)) return undefined;
  if (body.max_tokens !== undefined && body.max_tokens !== null) {
    return {
      message:
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      code: "unsupported_parameter",
      param: "max_tokens",
    };
  }
  if (body.temperature !== undefined && body.temperature !== null && body.temperature !== 1) {
    return {
      message: `Unsupported value: 'temperature' does not support ${String(body.temperature)} with this model. Only the default (1) value is supported.`,
      code: "unsupported_value",
      param: "temperature",
    };
  }
  return undefined;
}

/** The 400 for a request OpenAI refuses, if any. */
export function openAiRequestRefusal(body: Json): OpenAiRefusal | undefined {
  return (
    reasoningRefusal(body) ?? (Array.isArray(body.messages) ? openAiPairingRefusal(body.messages) : undefined)
  );
}
