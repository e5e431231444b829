import { describe, expect, it } from "vitest";
import { emulatedProvider, streamFailure, useLlmEmulator } from "./emulator-setup.test-helper.js";
import type { ModelRequest, Provider } from "./provider.js";

const emulator = useLlmEmulator();

const request: ModelRequest = {
  model: "gpt-4o-mini",
  system: "",
  messages: [{ role: "user", content: "hi" }],
  tools: [],
};

const failure = (provider: Provider, req = request) => streamFailure(provider, req);

const OPENAI_QUOTA =
  "The language model service will not answer: its account is out of credit or has used up its quota, so trying again will not help. An operator needs to add credit or raise the quota on that account, or set OPENAI_API_KEY to a key of an account that has some.";

describe("a provider account out of credit or quota", () => {
  it("is said as such on OpenAI's 429 insufficient_quota, asked once, not as a rate limit", async () => {
    emulator().setResponder(() => ({ error: { status: 429, type: "insufficient_quota", retryAfter: 0 } }));
    const error = await failure(emulatedProvider(emulator(), "openai", { apiKey: "sk-test", maxRetries: 3 }));
    expect(error?.code).toBe("llm_quota");
    expect(error?.userMessage).toBe(OPENAI_QUOTA);
    expect(emulator().requests).toHaveLength(1);
  });

  it("still retries a 429 that is a rate limit", async () => {
    emulator().enqueue({ error: { status: 429, retryAfter: 0 } }, { text: "Hello." });
    const error = await failure(emulatedProvider(emulator(), "openai", { apiKey: "sk-test", maxRetries: 3 }));
    expect(error).toBeUndefined();
    expect(emulator().requests).toHaveLength(2);
  });

  it("is said as such on Anthropic's credit balance refusal and its billing_error", async () => {
    const anthropic = emulatedProvider(emulator(), "anthropic", { apiKey: "sk-ant-test", maxRetries: 3 });
    const req = { ...request, model: "claude-haiku-5-5" };
    emulator().enqueue(
      {
        error: {
          status: 400,
          message:
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
        },
      },
      { error: { status: 402, message: "Your account has a billing issue." } },
    );
    for (let i = 0; i < 2; i++) {
      const error = await failure(anthropic, req);
      expect(error?.code).toBe("llm_quota");
      expect(error?.userMessage).toBe(OPENAI_QUOTA.replace("OPENAI_API_KEY", "ANTHROPIC_API_KEY"));
    }
    expect(emulator().requests).toHaveLength(2);
  });
});
