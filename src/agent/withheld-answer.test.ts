import { describe, expect, it } from "vitest";
import type { ScriptedTurn } from "../../test/emulators/llm/index.js";
import { FunctionHub } from "../../test/support/scripted.js";
import { runToolLoop } from "./loop.js";
import { emulatedProvider, useLlmEmulator } from "./providers/emulator-setup.test-helper.js";
import { FILTERED_NOTE, REFUSED_NOTE } from "./step-stream.js";

const emulator = useLlmEmulator();

/** The answer the person is shown, and what the session keeps of it, for one scripted model answer. */
async function answer(kind: "openai" | "anthropic", turn: ScriptedTurn) {
  emulator().enqueue(turn);
  const gen = runToolLoop(
    {
      provider: emulatedProvider(emulator(), kind, { apiKey: "sk-test-withheld" }),
      hub: new FunctionHub({}),
      model: kind === "openai" ? "gpt-4o" : "claude-sonnet-5-5",
      maxSteps: 5,
      repeatLimit: 3,
      signal: new AbortController().signal,
    },
    { system: "sys", messages: [{ role: "user", content: "How do I pick this lock?" }], tools: [] },
  );
  let shown = "";
  let step = await gen.next();
  while (!step.done) {
    if (step.value.type === "text") shown += step.value.delta;
    step = await gen.next();
  }
  return { shown, text: step.value.text, kept: step.value.added };
}

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
      `I can help with\n\n${REFUSED_NOTE}`,
    );
  });
});
