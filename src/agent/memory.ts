import { performance } from "node:perf_hooks";
import { decode, encode } from "gpt-tokenizer/encoding/o200k_base";
import type { Config } from "../config.js";
import { SwitchboardError } from "../core/errors.js";
import type { ChatMessage } from "../core/messages.js";
import { log } from "../log.js";
import { withTimeout } from "../signals.js";
import type { Session, SessionRepository } from "../store/sessions.js";
import type { Lease } from "../store/state.js";
import { promptBudget, tokenizerMargin } from "./answer-room.js";
import { countTokens, messagesTokens, messagesTokensAtMost, tokensAtMost } from "./context.js";
import { inputBudgetOf, type ModelLimits, modelLimits } from "./model-limits.js";
import type { Provider } from "./providers/provider.js";
import { withoutThinking } from "./providers/think.js";
import { headAndTail } from "./trim.js";

export interface CompressDeps {
  provider: Provider;
  /** The summarisation model (`models.summary`, else the chat model). */
  model: string;
  sessions: SessionRepository;
  config: Config;
  /** Limits of the chat model, whose prompts the compression keeps in budget. */
  limits: ModelLimits;
  signal?: AbortSignal;
  /** What the thread's prompts carry besides its history, in tokens (see `needsCompression`). */
  overhead?: () => number;
}

export interface CompressResult {
  compressed: boolean;
  archived: number;
  ms: number;
}

/** `memory.compressAt` is a share of the context window (<= 1) or a token count (> 1). */
export function compressThreshold(config: Config, limits: ModelLimits): number {
  const at = config.memory.compressAt;
  const tokens = at <= 1 ? Math.floor(at * limits.contextWindow) : Math.floor(at);
  return Math.min(tokens, inputBudgetOf(limits));
}

/** The summary's target length: a small share of the budget, so it never crowds out the recent messages. */
export function summaryTargetTokens(limits: ModelLimits): number {
  return Math.max(120, Math.min(1_000, Math.floor(inputBudgetOf(limits) * 0.08)));
}

/** The hard cap on a summary a model returns, whatever it was asked for. */
function summaryCapTokens(limits: ModelLimits): number {
  return Math.max(summaryTargetTokens(limits) * 2, Math.floor(inputBudgetOf(limits) * 0.2));
}

export function activeTokens(session: Session): number {
  return messagesTokens(session.messages) + countTokens(session.summary ?? "");
}

/**
 * Where to cut the active window: everything before the returned index is folded. Keeps
 * the newest `keep` messages, never cuts between a tool call and its results, and
 * prefers to cut before a user message so that the kept part starts a whole turn.
 */
export function foldPoint(messages: readonly ChatMessage[], keep: number): number {
  const cut = messages.length - keep;
  if (cut <= 0) return 0;
  for (let i = cut; i > 0 && i >= cut / 2; i--) {
    if (messages[i]?.role === "user") return i;
  }
  for (let i = cut; i > 0; i--) {
    if (messages[i]?.role !== "tool") return i;
  }
  return 0;
}

/**
 * Whether the active window is over the threshold. `overhead`: what the thread's prompts
 * carry besides it (instructions and tool specs, in tokens), when known: the history's
 * room is the input budget less that, and past that room the oldest messages leave the
 * prompt unsummarised, so a fold is due there too (a large catalog on a large window:
 * 105k of room under a 120k threshold).
 */
export function needsCompression(
  session: Session,
  config: Config,
  limits: ModelLimits,
  overhead: () => number = () => 0,
): boolean {
  if (foldPoint(session.messages, config.memory.keepMessages) === 0) return false;
  const threshold = compressThreshold(config, limits);
  // Far below the threshold (most threads, after most turns): known without encoding
  // anything. Instructions and tool specs never take half of the input budget (the specs
  // have their share of the window, 15 % by default).
  const atMost = messagesTokensAtMost(session.messages) + tokensAtMost(session.summary ?? "");
  if (atMost <= threshold && atMost <= inputBudgetOf(limits) / 2) return false;
  return activeTokens(session) > Math.min(threshold, inputBudgetOf(limits) - overhead());
}

/** Old tool outputs are often pages of JSON; their head and tail carry what a summary needs. */
const TOOL_OUTPUT_KEEP = { over: 2_000, head: 1_000, tail: 400 };
const ARGUMENTS_KEEP = { over: 1_000, head: 700, tail: 200 };
const TEXT_KEEP = { over: 24_000, head: 16_000, tail: 6_000 };

/** One message as a line of the transcript the summariser reads. */
export function transcriptLine(m: ChatMessage): string {
  if (m.role === "user") {
    const who = m.author ? `user ${m.author}` : "user";
    const images = m.parts?.filter((p) => p.type === "image").length ?? 0;
    const note = images ? ` [${images} image(s) attached]` : "";
    return `[${who}]: ${headAndTail(m.content, TEXT_KEEP)}${note}`;
  }
  if (m.role === "assistant") {
    const lines = m.content.trim() ? [`[assistant]: ${headAndTail(m.content, TEXT_KEEP)}`] : [];
    for (const call of m.toolCalls ?? []) {
      const args = headAndTail(call.invalidArguments ?? JSON.stringify(call.arguments), ARGUMENTS_KEEP);
      lines.push(`[assistant called tool ${call.name} with ${args}]`);
    }
    return lines.join("\n");
  }
  const status = m.isError ? " (error)" : "";
  return `[result of ${m.name}${status}]: ${headAndTail(m.content, TOOL_OUTPUT_KEEP)}`;
}

function summarySystem(words: number): string {
  return [
    "You keep the running summary of a long chat thread, so that the assistant can continue it without the older messages.",
    "Merge the previous summary (if any) and the new messages into one updated summary. Keep what still matters: who is involved, the user's goals and preferences, facts learned, what tools were used and what they found, decisions made, open questions and promised follow-ups. Drop small talk and anything later corrected.",
    "Keep exactly as written: names, numbers, amounts, dates, identifiers (ticket, issue, order and commit ids), file paths, URLs, commands and short code that matters.",
    "Write the summary in the language the conversation is held in.",
    `Write plain text in short bullet points, at most ${words} words. No preamble, do not address anyone, do not invent anything that is not in the input.`,
  ].join("\n");
}

/**
 * Picks the messages to fold and renders them for the summariser, taking fewer (at a
 * clean boundary) when the summarisation model could not read them all at once.
 */
function planFold(
  messages: readonly ChatMessage[],
  cut: number,
  roomTokens: number,
): { count: number; transcript: string } {
  const lines: string[] = [];
  let used = 0;
  let count = 0;
  let pending: string[] = [];
  let pendingTokens = 0;
  for (let i = 0; i < cut; i++) {
    const m = messages[i] as ChatMessage;
    const line = transcriptLine(m);
    pending.push(line);
    pendingTokens += countTokens(line) + 1;
    const next = messages[i + 1];
    const atBoundary = i + 1 === cut || next?.role !== "tool";
    if (!atBoundary) continue;
    if (used + pendingTokens > roomTokens && count > 0) break;
    lines.push(...pending);
    used += pendingTokens;
    count = i + 1;
    pending = [];
    pendingTokens = 0;
  }
  return { count, transcript: lines.join("\n") };
}

function capTokens(text: string, cap: number): string {
  const tokens = encode(text, { disallowedSpecial: new Set() });
  if (tokens.length <= cap) return text;
  return decode(tokens.slice(0, cap)).trimEnd();
}

async function summarise(
  deps: Omit<CompressDeps, "sessions">,
  previous: string | undefined,
  transcript: string,
  maxOutputTokens: number,
  words: number,
): Promise<string> {
  const parts: string[] = [];
  if (previous?.trim()) parts.push(`<previous_summary>\n${previous.trim()}\n</previous_summary>`);
  parts.push(`<new_messages>\n${transcript}\n</new_messages>`);
  parts.push("Write the updated summary.");
  const signal = withTimeout(deps.config.llm.requestTimeoutMs, deps.signal);
  let text = "";
  let stop = "end";
  for await (const event of deps.provider.stream(
    {
      model: deps.model,
      system: summarySystem(words),
      messages: [{ role: "user", content: parts.join("\n\n") }],
      tools: [],
      maxOutputTokens,
    },
    signal,
  )) {
    if (event.type === "text") text += event.delta;
    else if (event.type === "stop") stop = event.reason;
  }
  if (stop === "length") {
    log.warn({ model: deps.model }, "summary hit the output limit; keeping what was written");
  }
  return withoutThinking(text, deps.model).trim();
}

/** A fold worked out on a snapshot of a session: the summary of its first `count` messages. */
export interface FoldPlan {
  count: number;
  summary: string;
  /** What the session looked like when the plan was made; `applyFold` refuses a session that moved on. */
  generation: number;
  archivedCount: number;
  ms: number;
}

/**
 * Summarises the previous summary and the oldest messages (all but the newest
 * `memory.keepMessages`, tool groups kept whole) with the summarisation model. Reads the
 * session and changes nothing, so it can run while the thread's next turn does.
 */
export async function planCompression(
  session: Session,
  deps: Omit<CompressDeps, "sessions">,
  opts: { force?: boolean } = {},
): Promise<FoldPlan | undefined> {
  const started = performance.now();
  const { config, limits } = deps;
  if (!opts.force && !needsCompression(session, config, limits, deps.overhead)) return undefined;
  const cut = foldPoint(session.messages, config.memory.keepMessages);
  if (cut === 0) return undefined;

  const target = summaryTargetTokens(limits);
  // About 0.7 words a token in English; other languages run shorter, which errs the safe way.
  const words = Math.floor(target * 0.7);
  const reader = modelLimits(config, deps.model);
  const outputTokens = Math.min(reader.maxOutputTokens, Math.max(1_024, target * 2));
  const overhead = countTokens(summarySystem(words)) + countTokens(session.summary ?? "") + 64;
  // Its answer is not shrunk to what the window has left: the whole of it must fit.
  const margin = tokenizerMargin(config, deps.model, deps.provider.name);
  const room = promptBudget(reader.contextWindow, outputTokens, margin, outputTokens) - overhead;
  const { count, transcript } = planFold(session.messages, cut, room);
  if (count === 0) return undefined;

  const raw = await summarise(deps, session.summary, transcript, outputTokens, words);
  if (!raw) {
    throw new SwitchboardError("llm_unavailable", `summary model ${deps.model} returned an empty summary`);
  }
  const cap = summaryCapTokens(limits);
  const summary = capTokens(raw, cap);
  if (summary !== raw) {
    log.warn({ model: deps.model, cap }, "summary longer than allowed; cut to fit the budget");
  }
  const { generation, archivedCount } = session;
  return { count, summary, generation, archivedCount, ms: Math.round(performance.now() - started) };
}

/**
 * Moves the planned messages to the archive and puts the summary in their place, on the
 * session as it is now (turns since the plan only appended, so its first `count` messages
 * are the planned ones). False, changing nothing, when /new or another fold came between.
 * The caller saves the session; until then the stored one does not point at the new
 * archive record, and the next fold overwrites it. `lease`: the thread's lock the archive
 * record is written under (see `SessionRepository.archive`).
 */
export async function applyFold(
  session: Session,
  plan: FoldPlan,
  sessions: SessionRepository,
  lease?: Lease,
): Promise<boolean> {
  if (session.generation !== plan.generation || session.archivedCount !== plan.archivedCount) return false;
  if (session.messages.length < plan.count) return false;
  const folded = session.messages.slice(0, plan.count);
  await sessions.archive(session, folded, lease);
  session.summary = plan.summary;
  session.messages = session.messages.slice(plan.count);
  log.info(
    {
      key: session.key,
      archived: plan.count,
      kept: session.messages.length,
      summaryTokens: countTokens(plan.summary),
      keptTokens: messagesTokens(session.messages),
      ms: plan.ms,
    },
    "compressed conversation memory",
  );
  return true;
}

/**
 * Plans, applies and saves a fold in one go (the /compact command, under the thread's
 * lock, whose lease fences its writes). On any failure the session object and the stored
 * session are as they were, and the error is thrown.
 */
export async function compress(
  session: Session,
  deps: CompressDeps,
  opts: { force?: boolean; lease?: Lease } = {},
): Promise<CompressResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const plan = await planCompression(session, deps, opts);
  if (!plan) return { compressed: false, archived: 0, ms: elapsed() };
  const before = {
    summary: session.summary,
    messages: session.messages,
    archivedCount: session.archivedCount,
    archiveChunks: session.archiveChunks,
  };
  try {
    await applyFold(session, plan, deps.sessions, opts.lease);
    await deps.sessions.save(session, opts.lease);
  } catch (err) {
    Object.assign(session, before);
    throw err;
  }
  return { compressed: true, archived: plan.count, ms: elapsed() };
}
