import type {
  Base64ImageSource,
  ContentBlockParam,
  ImageBlockParam,
  MessageParam,
} from "@anthropic-ai/sdk/resources/messages";
import type { ChatMessage, UserMessage } from "../../core/messages.js";
import { withAuthor } from "./wire.js";

/** The conversation in the Messages API's shape (what `AnthropicProvider` sends). */

/**
 * The Messages API refuses a text block that is empty or only whitespace ("text content
 * blocks must contain non-whitespace text"), in any message of the conversation: one such
 * block stored in a thread would fail every later turn of it.
 */
function hasText(text: string): boolean {
  return text.trim() !== "";
}

/**
 * What a tool result with no text says to the model. The API holds a `tool_result`'s
 * string content to the rule above ("\n" is a whole result at times, from a shell or an
 * MCP tool), and leaving the content out would tell the model nothing, not even that the
 * tool ran.
 */
export const EMPTY_TOOL_RESULT = "(no output)";

/** The label of each image block made from a part that has one (see `UserPart`). */
export type ImageLabels = Map<ImageBlockParam, string>;

function userBlocks(msg: UserMessage, labels?: ImageLabels): ContentBlockParam[] {
  const blocks: ContentBlockParam[] = [];
  const text = withAuthor(msg);
  if (hasText(text)) blocks.push({ type: "text", text });
  for (const part of msg.parts ?? []) {
    if (part.type === "text") {
      if (hasText(part.text)) blocks.push({ type: "text", text: part.text });
    } else {
      const mediaType = part.mimeType as Base64ImageSource["media_type"];
      const block: ImageBlockParam = {
        type: "image",
        source: { type: "base64", media_type: mediaType, data: part.data },
      };
      if (part.label !== undefined) labels?.set(block, part.label);
      blocks.push(block);
    }
  }
  return blocks;
}

function assistantBlocks(msg: ChatMessage & { role: "assistant" }, toolBlocks: boolean): ContentBlockParam[] {
  const blocks: ContentBlockParam[] = hasText(msg.content) ? [{ type: "text", text: msg.content }] : [];
  for (const call of msg.toolCalls ?? []) {
    blocks.push(
      toolBlocks
        ? { type: "tool_use", id: call.id, name: call.name, input: call.arguments }
        : { type: "text", text: `[Earlier tool call: ${call.name} ${JSON.stringify(call.arguments)}]` },
    );
  }
  return blocks;
}

function resultBlock(msg: ChatMessage & { role: "tool" }, toolBlocks: boolean): ContentBlockParam {
  if (!toolBlocks) {
    const text = msg.isError
      ? `[${msg.name} failed: ${msg.content}]`
      : `[Result of ${msg.name}: ${msg.content}]`;
    return { type: "text", text };
  }
  return {
    type: "tool_result",
    tool_use_id: msg.toolCallId,
    content: hasText(msg.content) ? msg.content : EMPTY_TOOL_RESULT,
    ...(msg.isError ? { is_error: true } : {}),
  };
}

/**
 * Roles must alternate: tool results become `tool_result` blocks in a user message, and
 * neighbours with the same role (results followed by a new question, two questions in a
 * row while the bot was busy) merge into one message.
 *
 * Without `toolBlocks` (a request that offers no tools: its only tool server is down or
 * signed out) earlier calls and results go as text: the API refuses `tool_use` and
 * `tool_result` blocks in a request that defines no tools, on every later turn of the
 * thread.
 */
export function toAnthropicMessages(
  messages: ChatMessage[],
  { toolBlocks = true, labels }: { toolBlocks?: boolean; labels?: ImageLabels } = {},
): MessageParam[] {
  const out: Array<{ role: "user" | "assistant"; content: ContentBlockParam[] }> = [];
  const push = (role: "user" | "assistant", blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const last = out.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const msg of messages) {
    if (msg.role === "user") push("user", userBlocks(msg, labels));
    else if (msg.role === "assistant") push("assistant", assistantBlocks(msg, toolBlocks));
    else push("user", [resultBlock(msg, toolBlocks)]);
  }
  return out;
}
