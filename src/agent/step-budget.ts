import type { ChatMessage } from "../core/messages.js";
import { countTokens, messagesTokens, messagesTokensAtMost, messageTokens, tokensAtMost } from "./context.js";
import { trimToolResults } from "./trim.js";

/**
 * The prompt of a turn's first step is budgeted by `buildPrompt`; every later step adds
 * tool results on top. When they push the request past the model's window, this halves
 * the largest tool results of the turn (keeping head and tail) until the request fits,
 * so one bulky tool output cannot make the model refuse the whole turn. `buildPrompt`
 * keeps nothing back for the steps, so a history that fills its room (a smaller model
 * chosen, a fold still running or failed) left a step with a call and a result too short
 * to halve over the budget: refused by OpenAI, cut to a few tokens of answer by Anthropic.
 * The oldest earlier messages make way for them then. `question`: where the turn starts in
 * `convo` (see `turnQuestion`); a resumed turn's first steps come from the history, and
 * are the turn's as much as those run here. Returns how many left the front of `convo`.
 */
export function fitStep(system: string, convo: ChatMessage[], question: number, budget: number): number {
  // Nearly every step fits with room to spare: known without encoding anything.
  if (tokensAtMost(system) + messagesTokensAtMost(convo) <= budget) return 0;
  const systemTokens = countTokens(system);
  trimToolResults(convo, question, () => systemTokens + messagesTokens(convo) <= budget);
  return dropOldest(convo, question, budget - systemTokens);
}

/**
 * Leaves out the fewest oldest messages that bring `convo` within `room`, cutting only
 * before a user message: a tool call keeps its results, and the conversation still opens
 * with the user, as Anthropic requires. Never the turn's question (at `question`) or what
 * follows it; when those alone are over, everything before the question goes.
 */
function dropOldest(convo: ChatMessage[], question: number, room: number): number {
  if (question <= 0 || convo[question]?.role !== "user") return 0;
  let tokens = messagesTokens(convo);
  let cut = 0;
  while (tokens > room && cut < question) {
    tokens -= messageTokens(convo[cut] as ChatMessage);
    cut++;
    while (cut < question && convo[cut]?.role !== "user")
      tokens -= messageTokens(convo[cut++] as ChatMessage);
  }
  convo.splice(0, cut);
  return cut;
}
