import type { AssistantMessage, ChatMessage, PendingStep, ToolCall, ToolMessage } from "../core/messages.js";
import { REFUSED_IN_HISTORY, type StepResponse } from "./step-stream.js";

/** A call answered without running, or failed: the model gets `text` as its error result. */
export function errorResult(call: ToolCall, text: string): ToolMessage {
  return { role: "tool", toolCallId: call.id, name: call.name, content: text, isError: true };
}

/**
 * The result of a call the output limit cut. It says why and what to do instead: told only
 * that its arguments were not valid JSON, a model writes the same long call again and is
 * cut at the same place.
 */
export function cutOffRefusal(call: ToolCall, maxOutputTokens: number | undefined): string {
  const limit = maxOutputTokens ? ` (about ${maxOutputTokens.toLocaleString("en-US")} tokens)` : "";
  return `This call of ${call.name} was cut off: your answer reached the most you may write in one answer${limit} before its arguments were complete, so it was not run. Split the content into smaller calls, each well within that limit, and make them again.`;
}

/**
 * A call without the unfinished text of its arguments: what the model wrote before the
 * limit is not valid JSON to send back, and may be as long as the whole output limit.
 */
export function withoutUnfinished(call: ToolCall): ToolCall {
  const { invalidArguments: _, ...rest } = call;
  return rest;
}

/**
 * A waiting step that will never be decided (the person wrote again first): its message
 * and a result for each call, none of them run, so the session stays a valid conversation.
 */
export function abandonedStep(step: PendingStep, reason: string): ChatMessage[] {
  const settled = new Map(step.settled.map((m) => [m.toolCallId, m]));
  const results = (step.assistant.toolCalls ?? []).map(
    (call) => settled.get(call.id) ?? errorResult(call, reason),
  );
  return [step.assistant, ...results];
}

/** The step as `onCalls` reports it: which of its calls run now, and the results of the rest. */
export function startingStep(
  assistant: AssistantMessage,
  planned: { call: ToolCall; refusal?: string }[],
  settled: ToolMessage[] = [],
): PendingStep {
  return {
    assistant,
    asks: planned.filter((p) => p.refusal === undefined).map((p) => p.call.id),
    settled: [
      ...settled,
      ...planned.flatMap((p) => (p.refusal === undefined ? [] : [errorResult(p.call, p.refusal)])),
    ],
  };
}

/** What the session keeps of a step's text, sent to the model again in later requests. */
export function keptText(response: StepResponse): string {
  if (response.stop === "refused") return REFUSED_IN_HISTORY;
  // A whitespace-only answer ("\n\n" after a reasoning model's thoughts) says nothing, and
  // Anthropic refuses it back as a text block in every later request of the thread.
  return response.text.trim() ? response.text : "";
}
