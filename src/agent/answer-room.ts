import type { ChatMessage } from "../core/messages.js";
import { countTokens, messagesTokens, messagesTokensAtMost, tokensAtMost } from "./context.js";
import type { ProviderName } from "./providers/provider.js";

/**
 * The prompt is budgeted to `contextWindow - maxOutputTokens` in o200k tokens, and
 * `max_tokens` asks for the whole reserve. Anthropic counts with Claude's own tokenizer,
 * which is not public and counts the same text differently: English prose 5-30 % above
 * o200k, code and other scripts more. Since Claude 3.7 the API refuses a request whose
 * input plus `max_tokens` passes the window ("input length and `max_tokens` exceed context
 * limit") instead of asking for less, so a prompt near its budget failed the turn.
 */
export interface AnswerRoom {
  contextWindow: number;
  /** Tokens the offered tools' specs may take (they are not among the messages). */
  toolsTokens: number;
  /** How much more than o200k the provider may count the input, as a fraction of it. */
  margin: number;
}

/**
 * Claude's count against o200k, with room beyond the 30 % measured on prose: an estimate
 * that errs high costs only answer room at the end of a long thread, one that errs low a
 * 400 and the whole turn.
 */
const CLAUDE_MARGIN = 0.35;

/**
 * The least a step asks for, however full the window looks: below it neither a tool call
 * with real arguments nor an answer of a few paragraphs fits, and a request that may
 * overflow at that size is better tried than an answer certain to be cut.
 */
export const MIN_ANSWER_TOKENS = 1_024;

/** How far the provider's count may pass o200k, or undefined when o200k is its own count. */
export function tokenizerMargin(provider: ProviderName): number | undefined {
  return provider === "anthropic" ? CLAUDE_MARGIN : undefined;
}

/**
 * The output a step may ask for: the reserve, or what the window has left after the
 * input counted with the margin, never below MIN_ANSWER_TOKENS (nor above the reserve).
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
  return Math.min(reserve, Math.max(MIN_ANSWER_TOKENS, left(input)));
}
