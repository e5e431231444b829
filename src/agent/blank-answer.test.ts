import { describe, expect, it } from "vitest";
import { FunctionHub } from "../../test/support/scripted.js";
import type { ChatMessage } from "../core/messages.js";
import { runToolLoop } from "./loop.js";
import { emulatedProvider, useLlmEmulator } from "./providers/emulator-setup.test-helper.js";

const emulator = useLlmEmulator();

async function answer(messages: ChatMessage[]) {
  const gen = runToolLoop(
    {
      provider: emulatedProvider(emulator(), "anthropic", { apiKey: "sk-ant-test-blank" }),
      hub: new FunctionHub({}),
      model: "claude-haiku-5-5",
      maxSteps: 10,
      repeatLimit: 3,
      signal: new AbortController().signal,
    },
    { system: "sys", messages, tools: [] },
  );
  let step = await gen.next();
  while (!step.done) step = await gen.next();
  return step.value;
}

describe("a model's answer that is only whitespace", () => {
  it("is not kept as the answer's text, so the thread's next turn on Anthropic is not refused", async () => {
    emulator().enqueue({ text: "\n\n" });
    const question: ChatMessage = { role: "user", content: "Think it over." };
    const first = await answer([question]);
    expect(first.added).toEqual([{ role: "assistant", content: "" }]);
    expect(first.text).toMatch(/^I could not put together an answer/);

    emulator().enqueue({ text: "Here is my answer." });
    const next = await answer([question, ...first.added, { role: "user", content: "Well?" }]);
    expect(next.text).toBe("Here is my answer.");
  });
});
