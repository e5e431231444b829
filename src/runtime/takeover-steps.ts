/** What a turn taken over from a dead process decides about the step it was cut off in. */
import type { AgentEvent } from "../core/events.js";
import { type PendingStep, type Verdict, zeroUsage } from "../core/messages.js";
import type { ToolHub } from "../mcp/types.js";
import type { Session } from "../store/sessions.js";

/** What the model is told of a call cut off by a crash that was not run again. */
export const MAY_HAVE_RUN =
  "This call was started, but the process running it stopped before its result came back, so it may or may not have run. It was not run again: check whether it took effect before calling it again.";

/** The step's message is in the session: its calls' results were saved with it. */
export function stepSaved(session: Session, step: PendingStep): boolean {
  const ids = new Set(step.assistant.toolCalls?.map((c) => c.id));
  return session.messages.some((m) => m.role === "assistant" && m.toolCalls?.some((c) => ids.has(c.id)));
}

/** A cut-off call runs again only when its tool says that is safe. */
export function afterCrash(step: PendingStep, hub: ToolHub): Record<string, Verdict> {
  const verdicts: Record<string, Verdict> = {};
  for (const callId of step.asks) {
    const call = step.assistant.toolCalls?.find((c) => c.id === callId);
    const hints = call && hub.tools().find((t) => t.name === call.name)?.annotations;
    verdicts[callId] =
      hints?.readOnlyHint || hints?.idempotentHint ? { run: true } : { run: false, reason: MAY_HAVE_RUN };
  }
  return verdicts;
}

/** A finished answer's text as the turn's only event. */
export async function* answered(text: string): AsyncGenerator<AgentEvent, undefined> {
  yield { type: "text", delta: text };
  yield { type: "done", usage: zeroUsage() };
  return undefined;
}
