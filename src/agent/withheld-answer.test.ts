import { describe, expect, it } from "vitest";
import type { ScriptedTurn } from "../../test/emulators/llm/index.js";
import { FunctionHub } from "../../test/support/scripted.js";
import type { ChatMessage } from "../core/messages.js";
import { runToolLoop } from "./loop.js";
import { toAnthropicMessages } from "./providers/anthropic-messages.js";
import { emulatedProvider, useLlmEmulator } from "./providers/emulator-setup.test-helper.js";
import { FILTERED_NOTE, REFUSED_IN_HISTORY, REFUSED_NOTE, REFUSED_PARTWAY_NOTE } from "./step-stream.js";

const emulator = useLlmEmulator();

/** The answer the person is shown, and what the session keeps of it, for one scripted model answer. */
async function answer(kind: "openai" | "anthropic", turn: ScriptedTurn, hub = new FunctionHub({})) {
  emulator().enqueue(turn);
  const gen = runToolLoop(
    {
      provider: emulatedProvider(emulator(), kind, { apiKey: "sk-test-withheld" }),
      hub,
      model: kind === "openai" ? "gpt-4o" : "claude-sonnet-5-5",
      maxSteps: 5,
      repeatLimit: 3,
      signal: new AbortController().signal,
    },
    { system: "sys", messages: [{ role: "user", content: "How do I pick this lock?" }], tools: hub.tools() },
  );
  let shown = "";
  let step = await gen.next();
  while (!step.done) {
    if (step.value.type === "text") shown += step.value.delta;
    step = await gen.next();
  }
  return { shown, text: step.value.text, kept: step.value.added, stoppedBy: step.value.stoppedBy };
}

/** A tool that must never run: its calls come with an answer the provider withheld. */
const lockHub = () => new FunctionHub({ shell__run: () => "opened" });
const call = { name: "shell__run", arguments: { command: "open-lock --force" } };

describe("an answer the provider withholds", () => {
  it("says so when OpenAI's content filter withholds all of it", async () => {
    const { shown, text } = await answer("openai", { contentFilter: true });
    expect(shown).toBe(FILTERED_NOTE);
    expect(text).toBe(FILTERED_NOTE);
  });

  it("says so after the part OpenAI's content filter let through, and keeps only that part", async () => {
    const { shown, kept } = await answer("openai", { text: "First, take the", contentFilter: true });
    expect(shown).toBe(`First, take the\n\n${FILTERED_NOTE}`);
    expect(kept).toEqual([{ role: "assistant", content: "First, take the" }]);
  });

  it("says so when Claude refuses, with or without text before the refusal", async () => {
    expect((await answer("anthropic", { refusal: true })).shown).toBe(REFUSED_NOTE);
    expect((await answer("anthropic", { text: "I can help with", refusal: true })).shown).toBe(
      `I can help with\n\n${REFUSED_PARTWAY_NOTE}`,
    );
  });

  it("never runs the tool calls of an answer OpenAI's content filter stopped, and ends the turn", async () => {
    const hub = lockHub();
    const { shown, kept, stoppedBy } = await answer(
      "openai",
      { text: "Running it now.", toolCalls: [call], contentFilter: true },
      hub,
    );
    expect(hub.calls).toEqual([]);
    expect(emulator().requests).toHaveLength(1);
    expect(stoppedBy).toBe("answer");
    expect(shown).toBe(`Running it now.\n\n${FILTERED_NOTE}`);
    // No call the model will look for a result of: the next request stays a valid conversation.
    expect(kept).toEqual([{ role: "assistant", content: "Running it now." }]);
  });

  it("never runs the tool calls of an answer Claude refused, and ends the turn", async () => {
    const hub = lockHub();
    const { shown, kept } = await answer("anthropic", { toolCalls: [call], refusal: true }, hub);
    expect(hub.calls).toEqual([]);
    expect(emulator().requests).toHaveLength(1);
    expect(shown).toBe(REFUSED_NOTE);
    expect(kept).toEqual([{ role: "assistant", content: REFUSED_IN_HISTORY }]);
  });

  it("keeps none of what Claude wrote before refusing for the next request, which says only that it refused", async () => {
    const partial = "Sure. Step one: insert the tension wrench";
    const { shown, kept } = await answer("anthropic", { text: partial, refusal: true });
    // The person still sees what was shown, and that it was stopped.
    expect(shown).toBe(`${partial}\n\n${REFUSED_PARTWAY_NOTE}`);
    expect(JSON.stringify(kept)).not.toContain("tension wrench");
    const next: ChatMessage[] = [
      { role: "user", content: "How do I pick this lock?" },
      ...kept,
      { role: "user", content: "Then how do I call a locksmith?" },
    ];
    // The refused question stays apart from the next one, answered by the note, not merged into it.
    expect(toAnthropicMessages(next)).toEqual([
      { role: "user", content: [{ type: "text", text: "How do I pick this lock?" }] },
      { role: "assistant", content: [{ type: "text", text: REFUSED_IN_HISTORY }] },
      { role: "user", content: [{ type: "text", text: "Then how do I call a locksmith?" }] },
    ]);
  });
});
