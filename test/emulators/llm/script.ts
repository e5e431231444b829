import { randomBytes } from "node:crypto";
import { requestedOutput } from "./context.js";
import type { PlannedReply, RecordedRequest, ReplyTurn, ScriptedTurn } from "./types.js";

const DEFAULT_CHUNK = 8;

export function randomId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString("base64url")}`;
}

/** Rough token count: four characters a token, never zero for non-empty text. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

export function splitInto(text: string, size: number): string[] {
  const step = Math.max(1, Math.floor(size));
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += step) pieces.push(text.slice(i, i + step));
  return pieces;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Text of a message `content` in either protocol: a string, or an array of parts/blocks
 * whose `text` parts are joined. Tool results (Anthropic `tool_result` blocks) are skipped.
 */
export function textOfContent(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter(
      (p): p is Record<string, unknown> => isRecord(p) && p.type === "text" && typeof p.text === "string",
    )
    .map((p) => p.text as string)
    .join("");
}

function messagesOf(req: RecordedRequest): Record<string, unknown>[] {
  return req.messages.filter(isRecord);
}

/** Text of the last user message that carries text (a tool-result-only user turn is skipped). */
export function lastUserText(req: RecordedRequest): string {
  const users = messagesOf(req).filter((m) => m.role === "user");
  for (let i = users.length - 1; i >= 0; i--) {
    const text = textOfContent(users[i]?.content);
    if (text) return text;
  }
  return "";
}

/**
 * The result text when the conversation ends with tool results (OpenAI `tool` messages,
 * Anthropic `tool_result` blocks), otherwise undefined. Several results are joined by newlines.
 */
export function trailingToolResults(req: RecordedRequest): string | undefined {
  const msgs = messagesOf(req);
  const last = msgs.at(-1);
  if (!last) return undefined;
  if (req.protocol === "openai") {
    const results: string[] = [];
    for (let i = msgs.length - 1; i >= 0 && msgs[i]?.role === "tool"; i--) {
      results.unshift(textOfContent(msgs[i]?.content));
    }
    return results.length > 0 ? results.join("\n") : undefined;
  }
  if (last.role !== "user" || !Array.isArray(last.content)) return undefined;
  const blocks = last.content.filter(
    (b): b is Record<string, unknown> => isRecord(b) && b.type === "tool_result",
  );
  if (blocks.length === 0) return undefined;
  return blocks.map((b) => textOfContent(b.content)).join("\n");
}

export function echoTurn(req: RecordedRequest): ScriptedTurn {
  return { text: `You said: ${lastUserText(req)}` };
}

function inputChars(req: RecordedRequest): number {
  return req.system.length + JSON.stringify(req.messages).length;
}

export function planReply(turn: ReplyTurn, req: RecordedRequest, idPrefix: "call_" | "toolu_"): PlannedReply {
  let text = turn.text ?? "";
  let toolCalls = (turn.toolCalls ?? []).map((c) => ({
    id: c.id ?? randomId(idPrefix),
    name: c.name,
    argumentsJson: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments),
  }));
  let outChars = text.length + toolCalls.reduce((n, c) => n + c.name.length + c.argumentsJson.length, 0);
  // As the APIs do: an answer longer than the output the request allows stops there,
  // mid-sentence, with finish_reason "length" (Anthropic: "max_tokens"), also in the
  // middle of a tool call's arguments, or right after the call was opened.
  const allowed = requestedOutput(req);
  const truncated = allowed !== undefined && estimateTokens(outChars) > allowed;
  if (truncated) {
    text = text.slice(0, allowed * 4);
    toolCalls = cutCalls(toolCalls, allowed * 4 - text.length);
    outChars = text.length + toolCalls.reduce((n, c) => n + c.name.length + c.argumentsJson.length, 0);
  }
  return {
    text,
    toolCalls,
    usage: turn.usage ?? { input: estimateTokens(inputChars(req)), output: estimateTokens(outChars) },
    chunkSize: turn.chunkSize ?? DEFAULT_CHUNK,
    delayMs: turn.delayMs ?? 0,
    nameDeltas: turn.nameDeltas ?? "first",
    callIndexes: turn.callIndexes ?? "distinct",
    ...(truncated ? { truncated } : {}),
    ...(turn.contentFilter || turn.refusal ? { withheld: true as const } : {}),
  };
}

/**
 * The calls written within `room` characters: a call is begun once its name fits, and the
 * one the room runs out in keeps only the start of its arguments (possibly none of them).
 */
function cutCalls(calls: PlannedReply["toolCalls"], room: number): PlannedReply["toolCalls"] {
  const kept: PlannedReply["toolCalls"] = [];
  let left = room;
  for (const call of calls) {
    if (left === 0 || left < call.name.length) break;
    left -= call.name.length;
    const argumentsJson = call.argumentsJson.slice(0, left);
    left -= argumentsJson.length;
    kept.push({ ...call, argumentsJson });
    if (argumentsJson.length < call.argumentsJson.length) break;
  }
  return kept;
}
