import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator } from "./index.js";

let emu: LlmEmulator;
beforeAll(async () => {
  emu = await LlmEmulator.start();
});
afterEach(() => emu.reset());
afterAll(() => emu.close());

/** A request as a naive client sends it: no SDK to shape or check it. */
const openai = (body: Record<string, unknown>) =>
  fetch(`${emu.openaiBaseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: "Bearer sk-test", "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }),
  });

const anthropic = (body: Record<string, unknown>) =>
  fetch(`${emu.anthropicBaseUrl}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }),
  });

const fn = (name: string) => ({ type: "function", function: { name, parameters: { type: "object" } } });

describe("the emulator holds a request to its model's own output cap, as both APIs do", () => {
  it("refuses more than 16,384 completion tokens of gpt-4o and gpt-4o-mini, naming the parameter sent", async () => {
    const over = await openai({ model: "gpt-4o", max_tokens: 16_385 });
    expect(over.status).toBe(400);
    expect(await over.json()).toEqual({
      error: {
        message:
          "max_tokens is too large: 16385. This model supports at most 16384 completion tokens, whereas you provided 16385.",
        type: "invalid_request_error",
        param: "max_tokens",
        code: "invalid_value",
      },
    });
    const mini = await openai({ model: "gpt-4o-mini-2024-07-18", max_completion_tokens: 20_000 });
    expect(mini.status).toBe(400);
    expect(await mini.json()).toMatchObject({
      error: {
        message:
          "max_completion_tokens is too large: 20000. This model supports at most 16384 completion tokens, whereas you provided 20000.",
        param: "max_completion_tokens",
        code: "invalid_value",
      },
    });
    expect(emu.requests).toHaveLength(0);
    expect((await openai({ model: "gpt-4o", max_completion_tokens: 16_384 })).status).toBe(200);
  });

  it("refuses a Claude max_tokens above its model's cap, in the Messages API's words", async () => {
    const model = "claude-sonnet-4-5-20250929";
    const over = await anthropic({ model, max_tokens: 64_001 });
    expect(over.status).toBe(400);
    expect(await over.json()).toEqual({
      type: "error",
      error: {
        type: "invalid_request_error",
        message: `max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for ${model}`,
      },
      request_id: expect.stringMatching(/^req_/),
    });
    const opus = await anthropic({ model: "claude-opus-4-1", max_tokens: 32_001 });
    expect(opus.status).toBe(400);
    expect(emu.requests).toHaveLength(0);
    expect((await anthropic({ model, max_tokens: 64_000 })).status).toBe(200);
  });

  it("leaves models it does not know unchecked, but for their context window", async () => {
    expect((await anthropic({ model: "claude-sonnet-5-5", max_tokens: 100_000 })).status).toBe(200);
    expect((await openai({ model: "llama-3.1-8b", max_tokens: 100_000 })).status).toBe(200);
  });
});

describe("the emulator's OpenAI side refuses more than 128 tools, as Chat Completions does", () => {
  it("answers 129 tools with the API's 400 and takes 128", async () => {
    const tools = (n: number) => Array.from({ length: n }, (_, i) => fn(`tool_${i}`));
    const over = await openai({ model: "gpt-4o", tools: tools(129) });
    expect(over.status).toBe(400);
    expect(await over.json()).toEqual({
      error: {
        message:
          "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 129 instead.",
        type: "invalid_request_error",
        param: "tools",
        code: "array_above_max_length",
      },
    });
    expect(emu.requests).toHaveLength(0);
    expect((await openai({ model: "gpt-4o", tools: tools(128) })).status).toBe(200);
  });

  it("sets no count on Anthropic's side, which documents none", async () => {
    const tools = Array.from({ length: 129 }, (_, i) => ({
      name: `tool_${i}`,
      input_schema: { type: "object" },
    }));
    expect((await anthropic({ model: "claude-sonnet-4-5", max_tokens: 100, tools })).status).toBe(200);
  });
});
