import type { Usage } from "../../core/messages.js";
import { countTokens, messagesTokens } from "../context.js";
import type { ModelRequest } from "./provider.js";

/**
 * What a call that ended before its provider reported usage cost, as near as we can count
 * it: the prompt as the agent counts it for its window (memoised per message, so a
 * thread's history is not encoded again) and the output streamed so far. Reasoning the
 * model did and never streamed goes uncounted: this is a floor, not the bill.
 */
export function estimatedUsage(req: ModelRequest, output: string): Usage {
  const tools = req.tools.length > 0 ? countTokens(JSON.stringify(req.tools)) : 0;
  return {
    inputTokens: countTokens(req.system) + messagesTokens(req.messages) + tools,
    outputTokens: countTokens(output),
  };
}
