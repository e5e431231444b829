import type { AssistantMessage, ChatMessage, PendingStep, ToolCall, ToolMessage } from "../core/messages.js";

/** A call answered without running, or failed: the model gets `text` as its error result. */
export function errorResult(call: ToolCall, text: string): ToolMessage {
  return { role: "tool", toolCallId: call.id, name: call.name, content: text, isError: true };
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
