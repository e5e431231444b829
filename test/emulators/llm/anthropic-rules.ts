/**
 * Rules the Messages API holds a conversation to before any model runs, with the
 * message of the 400 `invalid_request_error` it answers. A client that breaks one breaks
 * every later turn of its thread, so the emulator refuses what the real API refuses.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

function blocksOf(messages: unknown[]): Json[] {
  return messages.flatMap((m) => (isObject(m) && Array.isArray(m.content) ? m.content.filter(isObject) : []));
}

/** The 400 message for a request whose messages break a rule, if any. */
export function anthropicMessagesRefusal(body: Json, messages: unknown[]): string | undefined {
  const blocks = blocksOf(messages);
  const tools = Array.isArray(body.tools) ? body.tools : [];
  // Even when the model is not to call any: the blocks stand for calls of defined tools.
  if (tools.length === 0 && blocks.some((b) => b.type === "tool_use" || b.type === "tool_result")) {
    return "Requests which include `tool_use` or `tool_result` blocks must define tools.";
  }
  // In any message, the user's as well as the assistant's ("\n\n" is a model's whole answer at times).
  const texts = blocks
    .filter((b) => b.type === "text")
    .map((b) => (typeof b.text === "string" ? b.text : ""));
  if (texts.some((t) => t === "")) return "messages: text content blocks must be non-empty";
  if (texts.some((t) => t.trim() === ""))
    return "messages: text content blocks must contain non-whitespace text";
  return undefined;
}
