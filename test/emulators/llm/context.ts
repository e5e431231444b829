import { countTokens as countO200k } from "gpt-tokenizer/encoding/o200k_base";
import type { RecordedRequest } from "./types.js";

/**
 * The emulator's own view of a prompt's size, as a provider would count it before it
 * answers, kept apart from Switchboard's counter (`src/agent/context.ts`) on purpose: a
 * test that reads `promptTokens` checks the bot's budget from the server's side.
 */
export type TokenCounter = (text: string) => number;

/**
 * OpenAI counts gpt-4o and later with the o200k encoding; so does the emulator for the
 * OpenAI protocol (the tokenizer, not Switchboard's accounting of what a prompt holds).
 */
export const o200kTokens: TokenCounter = (text) =>
  text.length === 0 ? 0 : countO200k(text, { disallowedSpecial: new Set() });

/**
 * Claude's tokenizer is not public. Characters / 4, rounded up, is the usual estimate;
 * on English prose it counts 15-30 % more tokens than o200k, as Claude's tokenizer does.
 */
export const charsOver4: TokenCounter = (text) => Math.ceil(text.length / 4);

/** Context windows by model id (exact match first, then the longest matching prefix). */
export const DEFAULT_CONTEXT_WINDOWS: Readonly<Record<string, number>> = {
  "gpt-4o": 128_000,
  "gpt-4o-mini": 128_000,
  "gpt-4.1": 1_047_576,
  "gpt-5": 400_000,
  "claude-": 200_000,
};

/** For any other model id. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

/** Role markers and separators around each message (OpenAI's cookbook counts 3 plus the role). */
const PER_MESSAGE = 4;
/** Tokens that open the assistant's reply. */
const REPLY_PRIMING = 3;
/** Per tool call or tool definition: ids, types and the wrapper around name and arguments. */
const PER_TOOL = 8;
/** An image costs a size-dependent amount; the emulator does not decode it and takes Claude's cap. */
const IMAGE_TOKENS = 1_600;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  return typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v);
}

/** Text parts count as text, images at IMAGE_TOKENS, tool results (Anthropic) by their content. */
function contentTokens(content: unknown, count: TokenCounter): number {
  if (typeof content === "string") return count(content);
  if (!Array.isArray(content)) return content === undefined || content === null ? 0 : count(str(content));
  let n = 0;
  for (const part of content) {
    if (!isRecord(part)) continue;
    switch (part.type) {
      case "text":
        n += count(str(part.text));
        break;
      case "image_url":
      case "image":
      case "input_image":
        n += IMAGE_TOKENS;
        break;
      case "tool_use":
        n += PER_TOOL + count(str(part.name)) + count(str(part.input));
        break;
      case "tool_result":
        n += PER_TOOL + contentTokens(part.content, count);
        break;
      default:
        // Other binary parts (documents) are not decoded either; their base64 is no measure of their size.
        n += isRecord(part.source) ? IMAGE_TOKENS : count(JSON.stringify(part));
    }
  }
  return n;
}

function toolsTokens(tools: unknown, count: TokenCounter): number {
  if (!Array.isArray(tools)) return 0;
  let n = 0;
  for (const t of tools) {
    if (!isRecord(t)) continue;
    // OpenAI wraps the definition in `function`; Anthropic sends it flat with `input_schema`.
    const def = isRecord(t.function) ? t.function : t;
    const schema = def.parameters ?? def.input_schema;
    n += PER_TOOL + count(str(def.name)) + count(str(def.description)) + count(str(schema));
  }
  return n;
}

/** Prompt tokens of a request as the provider would see it: system, messages, tool definitions. */
export function promptTokens(req: RecordedRequest, count: TokenCounter): number {
  let n = REPLY_PRIMING + toolsTokens(req.body.tools, count);
  if (req.protocol === "anthropic" && req.system) n += PER_MESSAGE + count(req.system);
  for (const m of req.messages) {
    if (!isRecord(m)) continue;
    // OpenAI's system and developer messages are counted here, with their role, like any other.
    n += PER_MESSAGE + contentTokens(m.content, count);
    if (typeof m.name === "string") n += count(m.name);
    if (typeof m.tool_call_id === "string") n += count(m.tool_call_id);
    if (Array.isArray(m.tool_calls)) {
      for (const call of m.tool_calls) {
        const fn = isRecord(call) && isRecord(call.function) ? call.function : {};
        n += PER_TOOL + count(str(fn.name)) + count(str(fn.arguments));
      }
    }
  }
  return n;
}

/** The output the request reserves: `max_tokens` (Anthropic, older OpenAI) or `max_completion_tokens`. */
export function requestedOutput(req: RecordedRequest): number | undefined {
  const v = req.body.max_completion_tokens ?? req.body.max_tokens;
  return typeof v === "number" && v > 0 ? v : undefined;
}

export function contextWindowOf(
  model: string,
  windows: Readonly<Record<string, number>>,
  fallback: number,
): number {
  const exact = windows[model];
  if (exact !== undefined) return exact;
  let best: string | undefined;
  for (const prefix of Object.keys(windows)) {
    if (model.startsWith(prefix) && (!best || prefix.length > best.length)) best = prefix;
  }
  return best === undefined ? fallback : (windows[best] ?? fallback);
}

/**
 * The 400 each provider answers when the prompt does not fit, worded as they word it:
 * OpenAI `context_length_exceeded`; Anthropic `invalid_request_error` "prompt is too
 * long", or, when only the prompt plus `max_tokens` overflows, the "exceed context limit"
 * validation error (Claude 3.7 and later no longer shrink `max_tokens` to fit).
 */
export function overflowMessage(
  protocol: RecordedRequest["protocol"],
  window: number,
  prompt: number,
  output: number | undefined,
): string | undefined {
  if (protocol === "openai") {
    if (prompt > window) {
      return `This model's maximum context length is ${window} tokens. However, your messages resulted in ${prompt} tokens. Please reduce the length of the messages.`;
    }
    if (output !== undefined && prompt + output > window) {
      return `This model's maximum context length is ${window} tokens. However, you requested ${prompt + output} tokens (${prompt} in the messages, ${output} in the completion). Please reduce the length of the messages or completion.`;
    }
    return undefined;
  }
  if (prompt > window) return `prompt is too long: ${prompt} tokens > ${window} maximum`;
  if (output !== undefined && prompt + output > window) {
    return `input length and \`max_tokens\` exceed context limit: ${prompt} + ${output} > ${window}, decrease input length or \`max_tokens\` and try again`;
  }
  return undefined;
}
