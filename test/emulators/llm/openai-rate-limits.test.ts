import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator } from "./index.js";

let emu: LlmEmulator;
beforeAll(async () => {
  emu = await LlmEmulator.start({ tokensPerMinute: { "gpt-4o": 1_000 } });
});
afterEach(() => emu.reset());
afterAll(() => emu.close());

/** One raw Chat Completions request, as no SDK shapes it. */
async function post(body: Record<string, unknown>) {
  const response = await fetch(`${emu.openaiBaseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: "Bearer sk-test", "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as unknown };
}

const words = (n: number) => "lorem ipsum ".repeat(n);

describe("the emulator's OpenAI side holds one request to the account's tokens-per-minute limit", () => {
  it("refuses a request whose prompt alone is over it with the API's 429, and no advice to retry", async () => {
    const { status, headers, body } = await post({
      model: "gpt-4o",
      messages: [{ role: "user", content: words(2_000) }],
    });
    const requested = emu.requests[0]?.promptTokens ?? 0;
    expect(requested).toBeGreaterThan(1_000);
    expect(status).toBe(429);
    expect(body).toEqual({
      error: {
        message: `Request too large for gpt-4o in organization org-emulator on tokens per min (TPM): Limit 1000, Requested ${requested}. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.`,
        type: "tokens",
        param: null,
        code: "rate_limit_exceeded",
      },
    });
    expect(headers.get("x-should-retry")).toBeNull();
    expect(headers.get("retry-after")).toBeNull();
  });

  it("counts the output a request reserves with its prompt", async () => {
    const small = [{ role: "user", content: "hi" }];
    expect((await post({ model: "gpt-4o", messages: small, max_completion_tokens: 500 })).status).toBe(200);
    const { status, body } = await post({ model: "gpt-4o", messages: small, max_tokens: 1_000 });
    expect(status).toBe(429);
    const requested = (emu.requests[1]?.promptTokens ?? 0) + 1_000;
    expect(JSON.stringify(body)).toContain(`Limit 1000, Requested ${requested}.`);
  });

  it("answers the same request for a model with no limit set", async () => {
    const { status } = await post({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: words(2_000) }],
    });
    expect(status).toBe(200);
  });
});
