import { describe, expect, it } from "vitest";
import { ScriptedProvider } from "../../test/support/scripted.js";
import type { AgentEvent } from "../core/events.js";
import type { ModelEvent } from "./providers/provider.js";
import { type StepResponse, streamStep } from "./step-stream.js";

/** One step of `model` over `script`: what it showed (events) and what it returned (kept in the session). */
async function step(
  model: string,
  script: ModelEvent[],
): Promise<{ events: AgentEvent[]; response: StepResponse }> {
  const provider = new ScriptedProvider([script]);
  const gen = streamStep(
    { provider, signal: new AbortController().signal },
    { model, system: "sys", messages: [{ role: "user", content: "hi" }], tools: [] },
    "",
  );
  const events: AgentEvent[] = [];
  let next = await gen.next();
  while (!next.done) {
    events.push(next.value);
    next = await gen.next();
  }
  return { events, response: next.value };
}

const shown = (events: AgentEvent[]) => events.flatMap((e) => (e.type === "text" ? [e.delta] : [])).join("");
const text = (...deltas: string[]): ModelEvent[] => [
  ...deltas.map((delta): ModelEvent => ({ type: "text", delta })),
  { type: "stop", reason: "end" },
];

describe("one step's visible text", () => {
  it("shows and keeps an answer that mentions the <think> tag, to its end", async () => {
    const answer =
      "Reasoning models wrap their reasoning in a `<think>` tag, and the client hides it.\nDone.";
    const { events, response } = await step("gpt-4o-mini", text(answer.slice(0, 50), answer.slice(50)));
    expect(shown(events)).toBe(answer);
    expect(response.text).toBe(answer);
    expect(events).not.toContainEqual({ type: "status", text: "Thinking…" });
  });

  it("hides the reasoning of a model whose template opened <think>, up to its lone </think>", async () => {
    const { events, response } = await step(
      "Qwen/QwQ-32B",
      text("Okay, the user says hi. I should", " greet them back.</th", "ink>\n\nHello! How can I help?"),
    );
    expect(shown(events)).toBe("\n\nHello! How can I help?");
    expect(response.text).toBe("\n\nHello! How can I help?");
    expect(events[0]).toEqual({ type: "status", text: "Thinking…" });
  });
});
