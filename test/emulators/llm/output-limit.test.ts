import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator } from "./index.js";

let emu: LlmEmulator;
beforeAll(async () => {
  emu = await LlmEmulator.start();
});
afterEach(() => emu.reset());
afterAll(() => emu.close());

const user = (content: string) => [{ role: "user" as const, content }];
const fn = (name: string) => ({
  type: "function" as const,
  function: { name, parameters: { type: "object" } },
});

describe("an answer at the output the request allows", () => {
  it("stops in the middle of a tool call's arguments, as the APIs do", async () => {
    // "Writing." (8) and the name (12) leave 20 of the 40 characters 10 tokens allow.
    const write = { name: "fs__write_ok", arguments: { path: "a.md", content: "x".repeat(200) } };
    emu.enqueue({ text: "Writing.", toolCalls: [write, { name: "fs__stat", arguments: {} }] });
    const openai = new OpenAI({ apiKey: "sk-test-key", baseURL: emu.openaiBaseUrl, maxRetries: 0 });
    const stream = await openai.chat.completions.create({
      model: "gpt-4o",
      messages: user("write it"),
      tools: [fn("fs__write_ok"), fn("fs__stat")],
      max_completion_tokens: 10,
      stream: true,
    });
    const args: string[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta.tool_calls ?? [])
        args[tc.index] = (args[tc.index] ?? "") + (tc.function?.arguments ?? "");
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(args).toEqual(['{"path":"a.md","cont']);
    expect(finish).toBe("length");
  });

  it("stops right after a tool_use block opened, with no input written at all", async () => {
    // "Writing." and the name are the 20 characters 5 tokens allow.
    emu.enqueue({
      text: "Writing.",
      toolCalls: [{ name: "fs__write_ok", arguments: { path: "a.md", content: "x".repeat(200) } }],
    });
    const anthropic = new Anthropic({
      apiKey: "sk-ant-test-key",
      baseURL: emu.anthropicBaseUrl,
      maxRetries: 0,
    });
    const message = await anthropic.messages
      .stream({
        model: "claude-sonnet-5-5",
        max_tokens: 5,
        messages: user("write it"),
        tools: [{ name: "fs__write_ok", input_schema: { type: "object" } }],
      })
      .finalMessage();
    expect(message.stop_reason).toBe("max_tokens");
    expect(message.content).toMatchObject([
      { type: "text", text: "Writing." },
      { type: "tool_use", name: "fs__write_ok", input: {} },
    ]);
  });
});
