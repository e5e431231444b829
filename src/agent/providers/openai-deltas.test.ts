import { describe, expect, it } from "vitest";
import type { NameDeltas } from "../../../test/emulators/llm/types.js";
import { emulatedProvider, useLlmEmulator } from "./emulator-setup.test-helper.js";
import type { ModelEvent } from "./provider.js";

const emulator = useLlmEmulator();

const tools = ["weather__get", "search__find", "fs__read_file"].map((name) => ({
  name,
  description: name,
  inputSchema: { type: "object" },
}));

/** The events of one answer through the real OpenAI client and the provider. */
async function events(): Promise<ModelEvent[]> {
  const provider = emulatedProvider(emulator(), "openai", { apiKey: "sk-test-openai" });
  const out: ModelEvent[] = [];
  const req = {
    model: "gpt-4o-mini",
    system: "",
    messages: [{ role: "user" as const, content: "go" }],
    tools,
  };
  for await (const event of provider.stream(req, new AbortController().signal)) out.push(event);
  return out;
}

describe("the OpenAI provider's streamed tool calls", () => {
  it.each<NameDeltas>(["first", "split", "every"])(
    "reads each call's name whole when the server sends it %s",
    async (nameDeltas) => {
      emulator().enqueue({
        toolCalls: [
          { name: "weather__get", arguments: { city: "Paris", days: 3 } },
          { name: "search__find", arguments: { q: "umbrellas" } },
        ],
        chunkSize: 4,
        nameDeltas,
      });
      const calls = (await events()).flatMap((e) => (e.type === "tool_call" ? [e.call] : []));
      expect(calls.map((c) => [c.name, c.arguments])).toEqual([
        ["weather__get", { city: "Paris", days: 3 }],
        ["search__find", { q: "umbrellas" }],
      ]);
    },
  );

  it.each([
    ["whole", 100],
    ["in pieces", 4],
  ])(
    "keeps apart parallel calls that all have index 0, as Ollama sends them, with arguments %s",
    async (_, chunkSize) => {
      emulator().enqueue({
        toolCalls: [
          { id: "call_a", name: "fs__read_file", arguments: { path: "a" } },
          { id: "call_b", name: "fs__read_file", arguments: { path: "b" } },
        ],
        chunkSize,
        callIndexes: "zero",
      });
      const out = await events();
      const calls = out.flatMap((e) => (e.type === "tool_call" ? [e.call] : []));
      expect(calls).toEqual([
        { id: "call_a", name: "fs__read_file", arguments: { path: "a" } },
        { id: "call_b", name: "fs__read_file", arguments: { path: "b" } },
      ]);
      expect(out.at(-1)).toEqual({ type: "stop", reason: "tool_calls" });
    },
  );
});
