/**
 * How both APIs pair a model's tool calls with their results, with the 400 each answers
 * a conversation that breaks the pairing: a thread stored that way fails every later turn,
 * and compaction, trimming and resumed turns are where a client breaks it.
 */
import type { OpenAiRefusal } from "./openai-rules.js";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * Chat Completions: `tool` messages answer the assistant message with `tool_calls` right
 * before them (other tool messages between), one per call, all before any other message.
 */
export function openAiPairingRefusal(messages: unknown[]): OpenAiRefusal | undefined {
  let open: { index: number; ids: string[]; answered: Set<string> } | undefined;
  const unanswered = (): OpenAiRefusal | undefined => {
    const missing = open?.ids.filter((id) => !open?.answered.has(id)) ?? [];
    if (!open || missing.length === 0) return undefined;
    return {
      message: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(", ")}`,
      code: null,
      param: `messages.[${open.index}].role`,
    };
  };
  for (const [i, m] of messages.entries()) {
    if (!isObject(m)) continue;
    if (m.role === "tool") {
      if (!open) {
        return {
          message:
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          code: null,
          param: `messages.[${i}].role`,
        };
      }
      const id = String(m.tool_call_id);
      if (!open.ids.includes(id)) {
        return {
          message: `Invalid parameter: 'tool_call_id' of '${id}' not found in 'tool_calls' of previous message.`,
          code: null,
          param: `messages.[${i}].tool_call_id`,
        };
      }
      open.answered.add(id);
      continue;
    }
    const missing = unanswered();
    if (missing) return missing;
    open = undefined;
    const calls = m.role === "assistant" && Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObject) : [];
    if (calls.length > 0) open = { index: i, ids: calls.map((c) => String(c.id)), answered: new Set() };
  }
  return unanswered();
}

function blockIds(message: unknown, type: "tool_use" | "tool_result"): string[] {
  if (!isObject(message) || !Array.isArray(message.content)) return [];
  const key = type === "tool_use" ? "id" : "tool_use_id";
  return message.content.filter((b) => isObject(b) && b.type === type).map((b) => String((b as Json)[key]));
}

/**
 * Messages API: every `tool_use` of an assistant message has its `tool_result` in the very
 * next (user) message, those results come first in it, and each result answers a
 * `tool_use` of the message right before it.
 */
export function anthropicPairingRefusal(messages: unknown[]): string | undefined {
  for (const [i, m] of messages.entries()) {
    if (!isObject(m) || !Array.isArray(m.content)) continue;
    if (m.role === "user") {
      const previous = messages[i - 1];
      const uses = isObject(previous) && previous.role === "assistant" ? blockIds(previous, "tool_use") : [];
      for (const [j, b] of m.content.entries()) {
        if (!isObject(b) || b.type !== "tool_result" || uses.includes(String(b.tool_use_id))) continue;
        return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(b.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      }
      continue;
    }
    const uses = blockIds(m, "tool_use");
    if (uses.length === 0) continue;
    const next = messages[i + 1];
    const results = isObject(next) && next.role === "user" ? blockIds(next, "tool_result") : [];
    const missing = uses.filter((id) => !results.includes(id));
    if (missing.length > 0) {
      return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
    const content = isObject(next) && Array.isArray(next.content) ? next.content : [];
    const leading = content.findIndex((b) => !isObject(b) || b.type !== "tool_result");
    if ((leading === -1 ? content.length : leading) < uses.length) {
      return `messages.${i + 1}: Did not find ${uses.length} \`tool_result\` block(s) at the beginning of this message. Messages following \`tool_use\` blocks must begin with a matching number of \`tool_result\` blocks.`;
    }
  }
  return undefined;
}
