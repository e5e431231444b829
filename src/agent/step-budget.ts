import type { ChatMessage, ToolMessage } from "../core/messages.js";
import { countTokens, messagesTokens, messagesTokensAtMost, tokensAtMost } from "./context.js";
import { headAndTail } from "./memory.js";

/**
 * The prompt of a turn's first step is budgeted by `buildPrompt`; every later step adds
 * tool results on top. When they push the request past the model's window, this halves
 * the largest tool results of the turn (keeping head and tail) until the request fits,
 * so one bulky tool output cannot make the model refuse the whole turn.
 */
export function fitStep(system: string, convo: ChatMessage[], firstOfTurn: number, budget: number): number {
  // Nearly every step fits with room to spare: known without encoding anything.
  if (tokensAtMost(system) + messagesTokensAtMost(convo) <= budget) return 0;
  let total = countTokens(system) + messagesTokens(convo);
  let trimmed = 0;
  while (total > budget) {
    const index = largestToolResult(convo, firstOfTurn);
    if (index < 0) break;
    const message = convo[index] as ToolMessage;
    const keep = Math.floor(message.content.length / 4);
    convo[index] = { ...message, content: headAndTail(message.content, { over: 0, head: keep, tail: keep }) };
    total = countTokens(system) + messagesTokens(convo);
    trimmed++;
  }
  return trimmed;
}

const MIN_TRIMMABLE = 2_000;

function largestToolResult(convo: ChatMessage[], from: number): number {
  let best = -1;
  let size = MIN_TRIMMABLE;
  for (let i = from; i < convo.length; i++) {
    const m = convo[i];
    if (m?.role === "tool" && m.content.length > size) {
      best = i;
      size = m.content.length;
    }
  }
  return best;
}
