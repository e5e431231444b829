import { describe, expect, it } from "vitest";
import { ScriptedProvider } from "../../test/support/scripted.js";
import type { AgentEvent } from "../core/events.js";
import type { ModelEvent } from "./providers/provider.js";
import { withTextToolProtocol } from "./providers/text-tools.js";
import { type StepResponse, streamStep } from "./step-stream.js";

/** One step of `model` over `script`: what it showed (events) and what it returned (kept in the session). */
async function step(
  model: string,
  script: ModelEvent[],
  textTools = false,
): Promise<{ events: AgentEvent[]; response: StepResponse }> {
  const scripted = new ScriptedProvider([script]);
  const provider = textTools ? withTextToolProtocol(scripted) : scripted;
  const gen = streamStep(
    { provider, signal: new AbortController().signal },
    {
      model,
      system: "sys",
      messages: [{ role: "user", content: "hi" }],
      tools: [{ name: "jira__create_issue", description: "File an issue.", inputSchema: { type: "object" } }],
    },
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

  it("makes one call of a text-protocol model that drafted it in its reasoning first, and shows no reasoning", async () => {
    const call =
      '<tool_call>{"name": "jira__create_issue", "arguments": {"title": "Login broken"}}</tool_call>';
    const { events, response } = await step(
      "r1-local",
      text(`<think>The user wants a ticket. I should respond with ${call} and then wait.</think>\n`, call),
      true,
    );
    expect(response.calls.map((c) => c.arguments)).toEqual([{ title: "Login broken" }]);
    expect(shown(events)).toBe("\n");
  });
});
