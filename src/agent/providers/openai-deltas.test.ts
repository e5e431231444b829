import { describe, expect, it } from "vitest";
import type { NameDeltas } from "../../../test/emulators/llm/types.js";
import { emulatedProvider, useLlmEmulator } from "./emulator-setup.test-helper.js";
import type { ModelEvent } from "./provider.js";

const emulator = useLlmEmulator();

const tools = ["weather__get", "search__find"].map((name) => ({
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
});
