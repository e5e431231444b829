import type { ChatMessage } from "../core/messages.js";
import { countTokens, messagesTokens, messagesTokensAtMost, tokensAtMost } from "./context.js";
import { trimToolResults } from "./trim.js";

/**
 * The prompt of a turn's first step is budgeted by `buildPrompt`; every later step adds
 * tool results on top. When they push the request past the model's window, this halves
 * the largest tool results of the turn (keeping head and tail) until the request fits,
 * so one bulky tool output cannot make the model refuse the whole turn.
 */
export function fitStep(system: string, convo: ChatMessage[], firstOfTurn: number, budget: number): number {
  // Nearly every step fits with room to spare: known without encoding anything.
  if (tokensAtMost(system) + messagesTokensAtMost(convo) <= budget) return 0;
  const systemTokens = countTokens(system);
  return trimToolResults(convo, firstOfTurn, () => systemTokens + messagesTokens(convo) <= budget);
}
