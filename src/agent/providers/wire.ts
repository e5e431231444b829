import type { ToolCall, UserMessage } from "../../core/messages.js";
import { randomRef } from "../../core/random-ref.js";

/** Small pieces of wire translation that every provider shares. */

/** Arguments must be a JSON object; anything else goes back to the loop as `invalidArguments`. */
export function parseArguments(raw: string): Pick<ToolCall, "arguments" | "invalidArguments"> {
  if (raw.trim() === "") return { arguments: {} };
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
      return { arguments: parsed as Record<string, unknown> };
    }
  } catch {
    // reported through invalidArguments below
  }
  return { arguments: {}, invalidArguments: raw };
}

/** For calls whose id the model or server did not supply. */
export function newCallId(): string {
  return `call_${randomRef()}`;
}

/**
 * The author goes into the text rather than OpenAI's `name` field: most compatible servers
 * drop `name` silently (so the model never sees who spoke), a few reject it, and Anthropic
 * has no such field.
 */
export function withAuthor(msg: UserMessage): string {
  return msg.author ? `[${msg.author}] ${msg.content}` : msg.content;
}
