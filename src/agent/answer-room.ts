import type { Config } from "../config.js";
import type { ChatMessage } from "../core/messages.js";
import { countTokens, messagesTokens, messagesTokensAtMost, tokensAtMost } from "./context.js";
import { bareModelId, type ModelLimits } from "./model-limits.js";
import type { ProviderName } from "./providers/provider.js";

/**
 * The prompt was budgeted to `contextWindow - maxOutputTokens` in o200k tokens, and
 * `max_tokens` asked for the whole reserve. Anthropic counts with Claude's own tokenizer,
 * which is not public and counts the same text differently: English prose 5-30 % above
 * o200k, code and other scripts more. Since Claude 3.7 the API refuses a request whose
 * input plus `max_tokens` passes the window ("input length and `max_tokens` exceed context
 * limit") instead of asking for less, so a prompt near its budget failed the turn. Models
 * other than OpenAI's served by an OpenAI-compatible server count with their own tokenizers
 * too: vLLM refuses a request past the window ("maximum context length"), Ollama cuts the
 * prompt to fit.
 */
export interface AnswerRoom {
  contextWindow: number;
  /** Tokens the offered tools' specs may take (they are not among the messages). */
  toolsTokens: number;
  /** How much more than o200k the model's tokenizer may count the input, as a fraction of it. */
  margin: number;
}

/**
 * Claude's count against o200k, with room beyond the 30 % measured on prose: an estimate
 * that errs high costs only answer room at the end of a long thread, one that errs low a
 * 400 and the whole turn.
 */
const CLAUDE_MARGIN = 0.35;

/**
 * Llama, Mistral, Qwen, Gemma and the rest, against o200k: a smaller vocabulary counts more.
 * cl100k (the base of Llama 3's 128k) counts this repository's README and TypeScript as o200k
 * does, GPT-2's 50k counts them 18 % and 33 % higher, and Mistral 7B, Llama 2 and Phi-3 have
 * 32k; other scripts run higher still, o200k being made to count them short. Sized for the
 * small vocabularies, for the reason CLAUDE_MARGIN is; `modelSettings.<model>.tokenizerMargin`
 * gives a model its own.
 */
const OPEN_MODEL_MARGIN = 0.35;

/**
 * OpenAI's own models, which o200k counts (gpt-oss too, whose o200k_harmony only adds chat
 * tokens), also fine-tuned (`ft:gpt-4o-mini:…`). By the id alone: the base URL is the
 * provider's, and a gateway's (OpenRouter's) serves `openai/gpt-4o` and `meta-llama/…` alike.
 */
const OPENAI_MODEL = /^(ft:)?(gpt-|chatgpt-|o[1-9](-|$))/;

/**
 * The least answer a prompt's budget leaves room for (promptBudget), the window counted
 * with the margin: below it neither a tool call with real arguments nor an answer of a few
 * paragraphs fits.
 */
export const MIN_ANSWER_TOKENS = 1_024;

/**
 * How far `model`'s count, `provider` serving it, may pass o200k, or undefined when o200k is
 * its own count: `modelSettings.<model>.tokenizerMargin` (0 for o200k), else Claude's for
 * Anthropic and for Claude through a gateway, none for OpenAI's models, OPEN_MODEL_MARGIN for
 * every other model.
 */
export function tokenizerMargin(config: Config, model: string, provider: ProviderName): number | undefined {
  const set = config.modelSettings[model]?.tokenizerMargin;
  if (set !== undefined) return set > 0 ? set : undefined;
  const id = bareModelId(model);
  if (provider === "anthropic" || id.startsWith("claude-")) return CLAUDE_MARGIN;
  return OPENAI_MODEL.test(id) ? undefined : OPEN_MODEL_MARGIN;
}

/**
 * The o200k tokens a prompt (tool specs included) may take beside `reserve` in a window of
 * `contextWindow`: `contextWindow - reserve` where o200k is the provider's own count (as
 * for OpenAI, whose requests always ask for the whole reserve). Where it is not, also no
 * more than leaves the window, the prompt counted with the margin, `least` tokens for the
 * answer: by default the least a step asks for (answerTokens gives it the rest of the
 * reserve that fits), the whole reserve for a request that always asks for all of it.
 * Without this bound a small reserve (2,000 of a 20,000 window) let a prompt budgeted to
 * 18,000 o200k tokens pass the window as Claude counts it, and each such request was refused.
 */
export function promptBudget(
  contextWindow: number,
  reserve: number,
  margin: number | undefined,
  least = Math.min(reserve, MIN_ANSWER_TOKENS),
): number {
  const plain = contextWindow - reserve;
  if (margin === undefined) return plain;
  return Math.max(0, Math.min(plain, Math.floor((contextWindow - least) / (1 + margin))));
}

/** `limits` with the prompt budget `margin` (tokenizerMargin's) needs, for the prompt, its later steps and compression. */
export function withPromptBudget(limits: ModelLimits, margin: number | undefined): ModelLimits {
  return { ...limits, inputBudget: promptBudget(limits.contextWindow, limits.maxOutputTokens, margin) };
}

/**
 * The output a step may ask for: the reserve, or what the window has left after the input
 * counted with the margin. Never more: a request whose input and `max_tokens` pass the
 * window is refused whole. A prompt within its budget (promptBudget) always leaves
 * MIN_ANSWER_TOKENS, or the whole reserve when that is smaller; one past it (a step that
 * could not be trimmed) gets what is left, and at least a token.
 */
export function answerTokens(
  room: AnswerRoom,
  reserve: number,
  system: string,
  messages: readonly ChatMessage[],
): number {
  const left = (input: number) => room.contextWindow - Math.ceil(input * (1 + room.margin));
  // Nearly every step fits with room to spare: known without encoding anything.
  if (left(tokensAtMost(system) + messagesTokensAtMost(messages) + room.toolsTokens) >= reserve)
    return reserve;
  const input = countTokens(system) + messagesTokens(messages) + room.toolsTokens;
  return Math.min(reserve, Math.max(1, left(input)));
}
