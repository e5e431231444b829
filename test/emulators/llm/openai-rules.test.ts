import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator } from "./index.js";

let emu: LlmEmulator;
beforeAll(async () => {
  emu = await LlmEmulator.start();
});
afterEach(() => emu.reset());
afterAll(() => emu.close());

const client = () => new OpenAI({ apiKey: "sk-test", baseURL: emu.openaiBaseUrl, maxRetries: 0 });
const hi = [{ role: "user" as const, content: "hi" }];

/** The SDK's error for a request, or undefined when it was answered. */
async function refusalOf(params: OpenAI.ChatCompletionCreateParamsNonStreaming) {
  try {
    await client().chat.completions.create(params);
    return undefined;
  } catch (err) {
    if (!(err instanceof OpenAI.BadRequestError)) throw err;
    return { status: err.status, error: err.error };
  }
}

describe("the emulator's OpenAI side refuses what Chat Completions refuses of reasoning models", () => {
  it("max_tokens for o1, o3, o4-mini and gpt-5, with the API's 400 body", async () => {
    for (const model of ["o1", "o3", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5.1"]) {
      expect(await refusalOf({ model, messages: hi, max_tokens: 100 })).toEqual({
        status: 400,
        error: {
          message:
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
          type: "invalid_request_error",
          param: "max_tokens",
          code: "unsupported_parameter",
        },
      });
    }
    expect(emu.requests).toHaveLength(0);
    expect(await refusalOf({ model: "o3", messages: hi, max_completion_tokens: 100 })).toBeUndefined();
  });

  it("a temperature other than the default 1", async () => {
    expect(await refusalOf({ model: "o4-mini", messages: hi, temperature: 0.2 })).toEqual({
      status: 400,
      error: {
        message:
          "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.",
        type: "invalid_request_error",
        param: "temperature",
        code: "unsupported_value",
      },
    });
    expect(await refusalOf({ model: "o4-mini", messages: hi, temperature: 1 })).toBeUndefined();
  });

  it("takes both from the other models", async () => {
    for (const model of ["gpt-4o", "gpt-4.1-mini", "gpt-5-chat-latest"]) {
      expect(await refusalOf({ model, messages: hi, max_tokens: 100, temperature: 0.2 })).toBeUndefined();
    }
  });
});
