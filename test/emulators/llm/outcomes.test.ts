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

const openai = (maxRetries = 0) => new OpenAI({ apiKey: "sk-test", baseURL: emu.openaiBaseUrl, maxRetries });
const anthropic = () =>
  new Anthropic({ apiKey: "sk-ant-test", baseURL: emu.anthropicBaseUrl, maxRetries: 0 });
const hi = [{ role: "user" as const, content: "hi" }];

const QUOTA = {
  message:
    "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
  type: "insufficient_quota",
  param: null,
  code: "insufficient_quota",
};

describe("outcomes the emulator can be scripted to give, as the APIs give them", () => {
  it("OpenAI's 429 insufficient_quota, which the SDK retries as it retries any 429", async () => {
    emu.setResponder(() => ({ error: { status: 429, type: "insufficient_quota", retryAfter: 0 } }));
    const err = await openai(2)
      .chat.completions.create({ model: "gpt-4o", messages: hi })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).error).toEqual(QUOTA);
    expect(emu.requests).toHaveLength(3);
  });

  it("x-should-retry: false on an error, which the SDK obeys", async () => {
    emu.setResponder(() => ({ error: { status: 429, type: "insufficient_quota", shouldRetry: false } }));
    const err = await openai(2)
      .chat.completions.create({ model: "gpt-4o", messages: hi })
      .catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).headers.get("x-should-retry")).toBe("false");
    expect(emu.requests).toHaveLength(1);
  });

  it("OpenAI's finish_reason content_filter after the text it let through", async () => {
    emu.enqueue({ text: "Here is how", contentFilter: true });
    const stream = await openai().chat.completions.create({ model: "gpt-4o", messages: hi, stream: true });
    let text = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect({ text, finish }).toEqual({ text: "Here is how", finish: "content_filter" });
    emu.enqueue({ contentFilter: true });
    const whole = await openai().chat.completions.create({ model: "gpt-4o", messages: hi });
    expect(whole.choices[0]?.finish_reason).toBe("content_filter");
  });

  it("Anthropic's stop_reason refusal, streamed and whole", async () => {
    emu.enqueue({ text: "I can't", refusal: true });
    const message = await anthropic()
      .messages.stream({ model: "claude-sonnet-5-5", max_tokens: 100, messages: hi })
      .finalMessage();
    expect(message.stop_reason).toBe("refusal");
    expect(message.content).toMatchObject([{ type: "text", text: "I can't" }]);
    emu.enqueue({ refusal: true });
    const whole = await anthropic().messages.create({
      model: "claude-sonnet-5-5",
      max_tokens: 100,
      messages: hi,
    });
    expect({ stop: whole.stop_reason, content: whole.content }).toEqual({ stop: "refusal", content: [] });
  });

  it("refuses to script one API's way of withholding an answer on the other", async () => {
    emu.enqueue({ text: "no", refusal: true });
    const err = await openai()
      .chat.completions.create({ model: "gpt-4o", messages: hi })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as Error).message).toContain("scripted an Anthropic refusal for a openai request");
  });
});
