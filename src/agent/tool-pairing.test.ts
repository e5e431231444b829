import { describe, expect, it } from "vitest";
import { FunctionHub } from "../../test/support/scripted.js";
import type { AssistantMessage, ChatMessage, ToolMessage, UserMessage } from "../core/messages.js";
import { buildPrompt } from "./context.js";
import { runToolLoop } from "./loop.js";
import { emulatedProvider, useLlmEmulator } from "./providers/emulator-setup.test-helper.js";

/*
 * The LLM emulator refuses, as both APIs do, a conversation whose tool results are not
 * paired with the calls right before them. A session can hold one that is not: a turn
 * stopped while its tools ran, a fold or a trimmed window that cut between a call and
 * its results, a result saved after the next question. The prompt repairs it
 * (`groupMessages`); these run it through each provider's real SDK to the emulator.
 */

const emulator = useLlmEmulator();

const user = (content: string): UserMessage => ({ role: "user", content });
const calls = (...ids: string[]): AssistantMessage => ({
  role: "assistant",
  content: "",
  toolCalls: ids.map((id) => ({ id, name: "fs__list", arguments: { dir: id } })),
});
const result = (id: string): ToolMessage => ({
  role: "tool",
  toolCallId: id,
  name: "fs__list",
  content: `a.txt ${id}`,
});

const HISTORIES: Record<string, ChatMessage[]> = {
  "a turn stopped while its tools ran": [user("list both"), calls("c1", "c2"), result("c1")],
  "a fold that kept the results but not their call": [
    result("c1"),
    { role: "assistant", content: "Two files." },
  ],
  "a result saved after the next question": [user("list"), calls("c1"), user("and?"), result("c1")],
};

/** One turn on `history` that calls a tool and then answers, as the agent asks it. */
async function turn(kind: "openai" | "anthropic", history: ChatMessage[], window = 128_000) {
  const model = kind === "openai" ? "gpt-4o" : "claude-sonnet-5-5";
  const prompt = buildPrompt({
    system: "sys",
    history,
    current: user("what is in /tmp?"),
    limits: { contextWindow: window, maxOutputTokens: 500 },
  });
  emulator().enqueue(
    { toolCalls: [{ name: "fs__list", arguments: { dir: "/tmp" } }] },
    { text: "One file." },
  );
  const gen = runToolLoop(
    {
      provider: emulatedProvider(emulator(), kind, { apiKey: "sk-test-pairing" }),
      hub: new FunctionHub({ fs__list: () => "b.txt" }),
      model,
      maxSteps: 5,
      repeatLimit: 3,
      signal: new AbortController().signal,
    },
    {
      system: prompt.system,
      messages: prompt.messages,
      tools: () => new FunctionHub({ fs__list: () => "" }).tools(),
    },
  );
  let step = await gen.next();
  while (!step.done) step = await gen.next();
  return step.value.text;
}

describe("a history whose tool results are not paired with their calls", () => {
  for (const kind of ["openai", "anthropic"] as const) {
    for (const [name, history] of Object.entries(HISTORIES)) {
      it(`is still answered on ${kind}: ${name}`, async () => {
        expect(await turn(kind, history)).toBe("One file.");
        // Both of the turn's requests were taken: none refused for the pairing.
        expect(emulator().requests).toHaveLength(2);
      });
    }

    it(`is still answered on ${kind} when the window cuts the history between a call and its results`, async () => {
      const long = "x".repeat(3_000);
      const history = [
        user(long),
        calls("c1"),
        { ...result("c1"), content: long },
        user("ok"),
        calls("c2"),
        result("c2"),
      ];
      expect(await turn(kind, history, 2_500)).toBe("One file.");
    });
  }
});
