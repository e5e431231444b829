import type { ToolCall, UserMessage } from "../../core/messages.js";
import { randomRef } from "../../core/random-ref.js";
import type { StopReason } from "./provider.js";

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

/** An answer the provider stopped for what it says: its calls are never to be run. */
export function isWithheld(reason: StopReason | undefined): boolean {
  return reason === "filtered" || reason === "refused";
}

/**
 * Why an answer that may hold tool calls stopped. The output limit wins over the calls: a
 * call the limit cut is half written, and an answer reported as "tool_calls" gets it run.
 * So do a content filter and a refusal (see isWithheld). Otherwise calls mean
 * "tool_calls", whatever the server said (some compatible servers say "stop").
 */
export function stopWithCalls(reason: StopReason, calls: number): StopReason {
  return reason === "length" || isWithheld(reason) || calls === 0 ? reason : "tool_calls";
}

/**
 * Whether the arguments of the call an answer stopped in at its output limit may be
 * unfinished: not yet a whole JSON object, or not begun (empty text is also what a call
 * without arguments sends, so it cannot be told apart).
 */
export function unfinished(raw: string): boolean {
  return raw.trim() === "" || parseArguments(raw).invalidArguments !== undefined;
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
