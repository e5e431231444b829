import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator } from "./index.js";
import type { CallIndexes } from "./types.js";

let emu: LlmEmulator;
beforeAll(async () => {
  emu = await LlmEmulator.start();
});
afterEach(() => emu.reset());
afterAll(() => emu.close());

/** Each tool-call delta of one streamed answer as `index:id`, the id left empty when the delta has none. */
async function callDeltas(callIndexes: CallIndexes): Promise<string[]> {
  emu.enqueue({
    toolCalls: [
      { id: "call_a", name: "fs__read_file", arguments: { path: "a" } },
      { id: "call_b", name: "fs__read_file", arguments: { path: "b" } },
    ],
    chunkSize: 6,
    callIndexes,
  });
  const client = new OpenAI({ apiKey: "sk-test", baseURL: emu.openaiBaseUrl, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: "llama3.1",
    messages: [{ role: "user", content: "read a and b" }],
    tools: [{ type: "function", function: { name: "fs__read_file", parameters: { type: "object" } } }],
    stream: true,
  });
  const deltas: string[] = [];
  for await (const chunk of stream)
    for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) deltas.push(`${tc.index}:${tc.id ?? ""}`);
  return deltas;
}

describe("the emulator's OpenAI streams number tool calls", () => {
  it("0, 1… by default, as OpenAI does, the id in each call's first delta only", async () => {
    expect(await callDeltas("distinct")).toEqual(["0:call_a", "0:", "0:", "1:call_b", "1:", "1:"]);
  });

  it("0 for every call with callIndexes zero, as Ollama does, still with each call's own id first", async () => {
    expect(await callDeltas("zero")).toEqual(["0:call_a", "0:", "0:", "0:call_b", "0:", "0:"]);
  });
});
