import { countTokens as countO200k } from "gpt-tokenizer/encoding/o200k_base";
import type { Config } from "../config.js";
import { SwitchboardError } from "../core/errors.js";
import type { ChatMessage, ToolMessage, UserMessage } from "../core/messages.js";
import { inputBudgetOf, type ModelLimits } from "./model-limits.js";
import { trimLargest, trimToolResults } from "./trim.js";

export { inputBudgetOf, type ModelLimits, modelLimits } from "./model-limits.js";

export interface PromptVars {
  model: string;
  platform: string;
  channel: string;
  user: string;
  lang?: string;
  time?: Date;
}

export const DEFAULT_SYSTEM_PROMPT = [
  "You are Switchboard, an assistant in a {{platform}} chat, talking with {{user}}.",
  "Current time: {{time}}. Model: {{model}}.",
  "Answer in {{lang}}.",
  "Use the available tools when they help you answer accurately or act for the user; do not guess what a tool can tell you.",
  "Keep answers concise and easy to read in a chat; Markdown is fine.",
].join("\n");

/** `2025-03-01T14:05:09+01:00`: local time with its offset, so the model knows the zone. */
export function isoWithOffset(date: Date): string {
  const pad = (n: number) => String(Math.trunc(Math.abs(n))).padStart(2, "0");
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}` +
    `${sign}${pad(offset / 60)}:${pad(offset % 60)}`
  );
}

/**
 * The system prompt for one turn: the channel's own prompt (platform + channel id), else
 * the configured global one, else the built-in default; with its `{{variables}}` filled.
 * Unknown variables are left as written, so a typo shows up in the prompt, not as a gap.
 */
export function renderSystemPrompt(config: Config, vars: PromptVars): string {
  const perChannel = config.agent.channelPrompts.find(
    (p) => p.platform === vars.platform && p.channel === vars.channel,
  );
  const template = perChannel?.prompt ?? config.agent.systemPrompt ?? DEFAULT_SYSTEM_PROMPT;
  const values: Record<string, string> = {
    model: vars.model,
    time: isoWithOffset(vars.time ?? new Date()),
    platform: vars.platform,
    channel: vars.channel,
    user: vars.user,
    lang: vars.lang ?? "the user's language",
  };
  return template.replace(/\{\{\s*(\w+)\s*\}\}/g, (whole, name: string) => values[name] ?? whole);
}

/**
 * Tokens of `text` in OpenAI's o200k encoding. Other models' tokenizers (Claude's is not
 * public; Llama's, Mistral's) count the same text higher: answer-room.ts keeps their
 * prompts and `max_tokens` inside the window with a margin.
 */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  if (text.length < CACHED_FROM) return countUncached(text);
  const hit = counted.get(text);
  if (hit !== undefined) {
    // The most recently used last: the oldest go first.
    counted.delete(text);
    counted.set(text, hit);
    return hit;
  }
  const n = countUncached(text);
  counted.set(text, n);
  countedChars += text.length;
  for (const old of counted.keys()) {
    if (countedChars <= CACHED_CHARS) break;
    counted.delete(old);
    countedChars -= old.length;
  }
  return n;
}

function countUncached(text: string): number {
  // Text such as "<|endoftext|>" in a user message is plain text here, never a reason to throw.
  return countO200k(text, { disallowedSpecial: new Set() });
}

/*
 * Counts of longer texts, by the text itself. A thread's history comes back from the
 * store as new objects every turn, with the same texts: looking a text up (hashing and
 * comparing it) is far cheaper than encoding it again. Bounded by characters held.
 */
const CACHED_FROM = 256;
const CACHED_CHARS = 2_000_000;
const counted = new Map<string, number>();
let countedChars = 0;

/**
 * Tokens `text` takes at most, without encoding it: every token is at least one UTF-8
 * byte, and a UTF-16 unit is at most three. Enough to know that a prompt fits when it
 * fits three times over, which spares most turns any counting at all.
 */
export function tokensAtMost(text: string): number {
  return 3 * text.length;
}

/** Role markers and separators that every chat format adds around a message. */
const MESSAGE_OVERHEAD = 4;
/** Per tool call: id, type and the wrapper around name and arguments. */
const TOOL_CALL_OVERHEAD = 8;
/**
 * An image costs a size-dependent amount (Claude about width*height/750, capped near
 * 1,600; OpenAI high detail 765-1,105 for common sizes); we reserve the larger figure
 * rather than decode the image.
 */
export const IMAGE_TOKENS = 1_600;

const cache = new WeakMap<ChatMessage, { key: string; tokens: number }>();

function cacheKey(m: ChatMessage): string {
  const calls = m.role === "assistant" ? (m.toolCalls?.length ?? 0) : 0;
  const parts = m.role === "user" ? (m.parts?.length ?? 0) : 0;
  return `${m.content.length}:${calls}:${parts}`;
}

/** A message's tokens, each of its texts measured by `count` (exactly, or at most). */
function countMessage(m: ChatMessage, count: (text: string) => number = countTokens): number {
  let n = MESSAGE_OVERHEAD + count(m.content);
  if (m.role === "user") {
    if (m.author) n += count(m.author) + 1;
    for (const part of m.parts ?? []) n += part.type === "image" ? IMAGE_TOKENS : count(part.text);
  } else if (m.role === "assistant") {
    for (const call of m.toolCalls ?? []) {
      n += TOOL_CALL_OVERHEAD + count(call.name);
      n += count(call.invalidArguments ?? JSON.stringify(call.arguments));
    }
  } else {
    n += count(m.name) + count(m.toolCallId);
  }
  return n;
}

/** Tokens the messages take at most (see `tokensAtMost`), without encoding any. */
export function messagesTokensAtMost(messages: readonly ChatMessage[]): number {
  let n = 0;
  for (const m of messages) n += countMessage(m, tokensAtMost);
  return n;
}

/** Tokens one message takes in a prompt, tool calls and images included. Memoised per object. */
export function messageTokens(m: ChatMessage): number {
  const key = cacheKey(m);
  const hit = cache.get(m);
  if (hit && hit.key === key) return hit.tokens;
  const tokens = countMessage(m);
  cache.set(m, { key, tokens });
  return tokens;
}

export function messagesTokens(messages: readonly ChatMessage[]): number {
  let n = 0;
  for (const m of messages) n += messageTokens(m);
  return n;
}

export interface BuiltPrompt {
  system: string;
  messages: ChatMessage[];
  promptTokens: number;
  /** History messages left out of this prompt (too old for the budget, or unusable). */
  omitted: number;
}

export interface BuildPromptOptions {
  system: string;
  summary?: string;
  pinned?: string;
  history: ChatMessage[];
  /** The message being answered; absent when a turn goes on after a wait (it is in `history`). */
  current?: UserMessage;
  /** Names the question of a turn that goes on, in `history` (see `turnQuestion`). */
  turn?: string;
  limits: ModelLimits;
  toolsTokens?: number;
}

export function composeSystem(system: string, summary?: string, pinned?: string): string {
  const sections = [system.trim()];
  if (summary?.trim()) {
    sections.push(
      `## Summary of the earlier conversation\nThe older messages of this thread are not shown; this is what they said:\n${summary.trim()}`,
    );
  }
  if (pinned?.trim()) sections.push(`## Pinned context\n${pinned.trim()}`);
  return sections.join("\n\n");
}

/** Messages that must be sent together: a plain message, or a tool-call message with its results. */
export type MessageGroup = ChatMessage[];

const MISSING_RESULT = "No result: the turn ended before this tool call finished.";
const synthesized = new WeakSet<ChatMessage>();

/**
 * What opens a history that does not start with the user's message (a summary's fold can
 * cut before an answer): Anthropic and many local chat templates refuse a conversation
 * that opens with the assistant ("roles must alternate").
 */
const CONTINUED: ChatMessage = {
  role: "user",
  content: "(This conversation began earlier: what was said before is summarised in the instructions.)",
};
synthesized.add(CONTINUED);

function openedByUser(messages: ChatMessage[]): ChatMessage[] {
  return messages.length > 0 && messages[0]?.role !== "user" ? [CONTINUED, ...messages] : messages;
}

/**
 * Splits history into groups the prompt can take or drop whole. Tool results whose call
 * is not right before them are dropped (providers reject them); tool calls whose results
 * are missing (an interrupted turn) get an error result, for the same reason.
 */
export function groupMessages(history: readonly ChatMessage[]): { groups: MessageGroup[]; dropped: number } {
  const groups: MessageGroup[] = [];
  let dropped = 0;
  let i = 0;
  while (i < history.length) {
    const m = history[i] as ChatMessage;
    i++;
    if (m.role === "tool") {
      dropped++;
      continue;
    }
    if (m.role !== "assistant" || !m.toolCalls?.length) {
      groups.push([m]);
      continue;
    }
    const group: ChatMessage[] = [m];
    const pending = new Map(m.toolCalls.map((c) => [c.id, c.name]));
    while (i < history.length && history[i]?.role === "tool") {
      const result = history[i] as ToolMessage;
      i++;
      if (pending.delete(result.toolCallId)) group.push(result);
      else dropped++;
    }
    for (const [toolCallId, name] of pending) {
      const stub: ToolMessage = { role: "tool", toolCallId, name, content: MISSING_RESULT, isError: true };
      synthesized.add(stub);
      group.push(stub);
    }
    groups.push(group);
  }
  return { groups, dropped };
}

/**
 * The prompt for one turn: system text (template, summary, pinned context), then the
 * newest history that fits the input budget (`inputBudgetOf`) after the system text, the
 * tools and the turn's own messages, then those: the current message, or, for a turn that
 * goes on, its question in the history and its steps since (see `ownPart`).
 */
export function buildPrompt(opts: BuildPromptOptions): BuiltPrompt {
  const system = composeSystem(opts.system, opts.summary, opts.pinned);
  const whole = wholeIfItFits(system, opts);
  if (whole) return whole;
  const systemTokens = countTokens(system) + MESSAGE_OVERHEAD;
  const toolsTokens = opts.toolsTokens ?? 0;
  const inputBudget = inputBudgetOf(opts.limits);
  // Kept free for the opener a window may need (see CONTINUED).
  const free = inputBudget - systemTokens - toolsTokens - messageTokens(CONTINUED);
  const { history, own } = ownPart(opts, free);
  const ownTokens = messagesTokens(own);
  if (opts.current && ownTokens > free)
    throw inputTooLarge(ownTokens, inputBudget - systemTokens - toolsTokens, opts.limits);
  const room = Math.max(0, free - ownTokens);

  const { groups } = groupMessages(history);
  let used = 0;
  let first = groups.length;
  for (let g = groups.length - 1; g >= 0; g--) {
    let cost = messagesTokens(groups[g] as MessageGroup);
    if (used + cost > room) {
      // A bulky tool result of an earlier turn (the session keeps it whole) is halved
      // until its group takes at most half of the room left, rather than leaving out
      // every message before it, its own turn's question included. Then a bulky
      // question or answer (a pasted file, a 20-page answer), for the same reason.
      const trimmed = [...(groups[g] as MessageGroup)];
      const share = Math.floor((room - used) / 2);
      const fits = () => messagesTokens(trimmed) <= share;
      trimToolResults(trimmed, 0, fits);
      trimLargest(trimmed, 0, fits, ["user", "assistant"]);
      cost = messagesTokens(trimmed);
      if (used + cost > room) break;
      groups[g] = trimmed;
    }
    used += cost;
    first = g;
  }
  // When older messages had to go, start the window at a user message: Anthropic wants
  // the conversation to open with one, and an answer without its question misleads.
  if (first > 0) {
    while (first < groups.length && groups[first]?.[0]?.role !== "user") {
      used -= messagesTokens(groups[first] as MessageGroup);
      first++;
    }
  }
  const earlier = groups.slice(first).flat();
  const messages = openedByUser([...earlier, ...own]);
  if (messages[0] === CONTINUED) used += messageTokens(CONTINUED);
  const fromHistory = opts.current ? earlier : [...earlier, ...own];
  const keptOriginals = fromHistory.filter((m) => !synthesized.has(m)).length;
  return {
    system,
    messages,
    promptTokens: systemTokens + toolsTokens + used + ownTokens,
    omitted: Math.max(0, opts.history.length - keptOriginals),
  };
}

/**
 * The turn's own messages, which the prompt keeps whatever the room, and the history
 * before them. A turn that goes on after a wait or a takeover has its question and first
 * steps in the history: budgeted as older messages, the steps took the room, the question
 * found none beside them, and the window, which must open with a user message, lost every
 * step too. They are kept as the current message is, their largest tool results halved to
 * fit `room`, as `fitStep` halves them in a turn that never stopped.
 */
function ownPart(opts: BuildPromptOptions, room: number): { history: ChatMessage[]; own: ChatMessage[] } {
  if (opts.current) return { history: opts.history, own: [opts.current] };
  const at = turnQuestion(opts.history, opts.turn);
  if (at < 0) return { history: opts.history, own: [] };
  const own = groupMessages(opts.history.slice(at)).groups.flat();
  trimToolResults(own, 0, () => messagesTokens(own) <= room);
  return { history: opts.history.slice(0, at), own };
}

/**
 * Where the turn's question is in `messages`: the user message named by `turn` (see
 * `UserMessage.turn`), else the last user message; -1 when there is none. By name first:
 * a resumed turn's question need not be the last user message of its history, and one
 * found by position let the real question and its first steps be left out.
 */
export function turnQuestion(messages: readonly ChatMessage[], turn?: string): number {
  const named = turn === undefined ? -1 : messages.findLastIndex((m) => m.role === "user" && m.turn === turn);
  return named >= 0 ? named : messages.findLastIndex((m) => m.role === "user");
}

/**
 * The prompt with the whole history, when the most its texts could take fits the budget:
 * nothing is encoded. `promptTokens` is then counted only if someone reads it.
 */
function wholeIfItFits(system: string, opts: BuildPromptOptions): BuiltPrompt | undefined {
  const toolsTokens = opts.toolsTokens ?? 0;
  const current = opts.current ? [opts.current] : [];
  const atMost =
    tokensAtMost(system) +
    MESSAGE_OVERHEAD +
    toolsTokens +
    messagesTokensAtMost(opts.history) +
    messagesTokensAtMost([CONTINUED]) +
    messagesTokensAtMost(current);
  if (atMost > inputBudgetOf(opts.limits)) return undefined;
  const { groups } = groupMessages(opts.history);
  const kept = openedByUser(groups.flat());
  const messages = [...kept, ...current];
  const keptOriginals = kept.filter((m) => !synthesized.has(m)).length;
  let promptTokens: number | undefined;
  return {
    system,
    messages,
    get promptTokens() {
      promptTokens ??= countTokens(system) + MESSAGE_OVERHEAD + toolsTokens + messagesTokens(messages);
      return promptTokens;
    },
    omitted: Math.max(0, opts.history.length - keptOriginals),
  };
}

function inputTooLarge(messageTokens: number, roomForMessage: number, limits: ModelLimits): SwitchboardError {
  const fmt = (n: number) => Math.max(0, n).toLocaleString("en-US");
  return new SwitchboardError(
    "input_too_large",
    `current message needs ${messageTokens} tokens, room is ${roomForMessage}`,
    {
      userMessage:
        `Your message is about ${fmt(messageTokens)} tokens, but this model has room for about ` +
        `${fmt(roomForMessage)} in one message (context window ${fmt(limits.contextWindow)} tokens, ` +
        `${fmt(limits.maxOutputTokens)} kept for the answer, the rest for instructions and tools). ` +
        "Please send a shorter message or split it into several.",
    },
  );
}
