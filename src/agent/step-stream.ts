import type { AgentEvent } from "../core/events.js";
import { addUsage, type ToolCall, type Usage, zeroUsage } from "../core/messages.js";
import type { ModelRequest, Provider, StopReason } from "./providers/provider.js";
import { ThinkFilter, thinkHoldFor } from "./providers/think.js";

/** What one model request of the tool loop gave: its visible text, its calls, its usage and why it stopped. */
export interface StepResponse {
  text: string;
  calls: ToolCall[];
  /** Ids of the calls the output limit cut (see the `tool_call` event): never to be run. */
  cutOff: string[];
  usage: Usage;
  stop?: StopReason;
  /** Sentences for the person from the provider (what the request left out), shown once the turn's answer ends. */
  notices: string[];
}

/** Told after an answer the model had to stop at its output limit: it reads as whole otherwise. */
export const CUT_OFF_NOTE =
  "(This answer was cut off: it reached the most the model may write in one answer. Ask me to go on.)";
/**
 * Told when the provider withholds an answer, or its rest: without it the person sees no
 * answer at all, or one that stops mid-sentence as if it were whole, and asking again the
 * same way only meets the same filter.
 */
export const FILTERED_NOTE =
  "The model's provider stopped this answer because its content filter flagged the question or the answer. Please rephrase the question; asked the same way, it will be stopped again.";
export const REFUSED_NOTE =
  "The model declined to answer this and stopped. Please rephrase the question, or ask something else.";
export const REFUSED_PARTWAY_NOTE =
  "The model declined to go on and stopped this answer partway, so what is above is incomplete. Please rephrase the question, or ask something else.";
/**
 * What the session keeps of a refused answer, in place of what the model wrote of it.
 * Anthropic's page on streaming refusals: after stop_reason "refusal" the context must be
 * reset, the refused turn removed or rephrased, or the requests that go on with it are
 * refused too; the person still sees what was shown, with REFUSED_PARTWAY_NOTE. Not
 * nothing: the refused question would then merge with the next one into one user message
 * (roles must alternate) and be answered again with it.
 */
export const REFUSED_IN_HISTORY = "[I declined to answer this, and my partial answer was discarded.]";
/** The model spent all of its output (thinking, as a reasoning model may) before any answer. */
export const NOTHING_WITHIN_LIMIT_NOTE =
  "The model used all the room it has for one answer before it wrote any of it. Ask for a shorter answer, or split the question.";
const NO_ANSWER_NOTE =
  "I could not put together an answer this time. Please rephrase the question or try again.";

/**
 * What a turn's answer ends with besides the model's text (`visible`, all its steps'),
 * if anything: why it stopped short, or, instead of the text, why there is none.
 */
export function closingNote(stop: StopReason | undefined, visible: string): string | undefined {
  const empty = !visible.trim();
  let note: string | undefined;
  if (stop === "filtered") note = FILTERED_NOTE;
  else if (stop === "refused") note = empty ? REFUSED_NOTE : REFUSED_PARTWAY_NOTE;
  else if (stop === "length") note = empty ? NOTHING_WITHIN_LIMIT_NOTE : CUT_OFF_NOTE;
  else if (empty) note = NO_ANSWER_NOTE;
  if (note === undefined || empty) return note;
  return `${visible.endsWith("\n") ? "\n" : "\n\n"}${note}`;
}

/**
 * The text that follows a turn's answer (`visible`) with the provider's `notices`, told once
 * each however many steps repeated them, if there are any.
 */
export function noticesAfter(visible: string, notices: ReadonlySet<string>): string | undefined {
  if (notices.size === 0) return undefined;
  const text = [...notices].join("\n\n");
  if (!visible.trim()) return text;
  return `${visible.endsWith("\n") ? "\n" : "\n\n"}${text}`;
}

/**
 * Streams one model request of the tool loop: its text handed on as it comes (the
 * `<think>` parts held back), its calls and usage gathered, `separator` before its first
 * visible text.
 */
export async function* streamStep(
  opts: { provider: Provider; signal: AbortSignal },
  req: ModelRequest,
  separator: string,
): AsyncGenerator<AgentEvent, StepResponse> {
  const think = new ThinkFilter(thinkHoldFor(req.model));
  const calls: ToolCall[] = [];
  const cutOff: string[] = [];
  let text = "";
  let usage = zeroUsage();
  let stop: StopReason | undefined;
  const notices: string[] = [];
  let pendingSeparator = separator;
  // A plain function, not a generator: `yield*` of a generator inside this async one costs
  // a promise per delta, and this runs for every batch of every answer.
  const shown = (chunk: string): AgentEvent | undefined => {
    if (!chunk) return undefined;
    text += chunk;
    const delta = pendingSeparator + chunk;
    pendingSeparator = "";
    return { type: "text", delta };
  };
  for await (const event of opts.provider.stream(req, opts.signal)) {
    if (event.type === "text") {
      const filtered = think.push(event.delta);
      if (filtered.startedThinking) yield { type: "status", text: "Thinking…" };
      const out = shown(filtered.text);
      if (out) yield out;
    } else if (event.type === "tool_call") {
      calls.push(event.call);
      if (event.cutOff) cutOff.push(event.call.id);
    } else if (event.type === "usage") {
      usage = addUsage(usage, event.usage);
    } else if (event.type === "notice") {
      notices.push(event.text);
    } else if (event.type === "stop") {
      stop = event.reason;
    }
  }
  const rest = shown(think.flush());
  if (rest) yield rest;
  return { text, calls, cutOff, usage, notices, ...(stop ? { stop } : {}) };
}
