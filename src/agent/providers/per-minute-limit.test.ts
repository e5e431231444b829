import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator } from "../../../test/emulators/llm/index.js";
import { emulatedProvider, streamFailure } from "./emulator-setup.test-helper.js";
import { perMinuteExcess } from "./per-minute-limit.js";
import type { ModelRequest } from "./provider.js";

const LIMIT = 2_000;
let emu: LlmEmulator;
beforeAll(async () => {
  emu = await LlmEmulator.start({ tokensPerMinute: { "gpt-4o": LIMIT } });
});
afterEach(() => emu.reset());
afterAll(() => emu.close());

const openai = (maxRetries = 2) => emulatedProvider(emu, "openai", { apiKey: "sk-test", maxRetries });

const request = (model: string, text: string): ModelRequest => ({
  model,
  system: "",
  messages: [{ role: "user", content: text }],
  tools: [],
});

const failure = streamFailure;

const ORDINARY_TPM =
  "Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s. Visit https://platform.openai.com/account/rate-limits to learn more.";

describe("a request larger than the account's tokens-per-minute limit", () => {
  it("is said to be too large for the per-minute limit, with what to do, and asked once", async () => {
    const error = await failure(openai(), request("gpt-4o", "lorem ipsum ".repeat(3_000)));
    expect(error?.code).toBe("llm_request_too_large");
    const requested = emu.requests[0]?.promptTokens ?? 0;
    expect(error?.userMessage).toBe(
      `My request to the language model was larger than its account allows in one minute (about ${requested.toLocaleString("en-US")} tokens; the limit is 2,000 tokens per minute), so waiting and trying again will not help. ` +
        "To make it smaller, start a fresh conversation with the new command or fold this one into a summary with the compact command (/new or /compact; on Slack, after the bot's slash command), or send fewer or smaller files; otherwise an operator can raise the account's tokens-per-minute limit.",
    );
    expect(emu.requests).toHaveLength(1);
  });

  it("is not taken for one when the request only met an ordinary TPM rate limit, which is retried", async () => {
    const tpm = {
      status: 429,
      type: "tokens",
      code: "rate_limit_exceeded",
      message: ORDINARY_TPM,
      retryAfter: 0,
    };
    emu.enqueue({ error: tpm }, { text: "Hello." });
    expect(await failure(openai(), request("gpt-4o-mini", "hi"))).toBeUndefined();
    expect(emu.requests).toHaveLength(2);

    emu.reset();
    emu.enqueue({ error: tpm }, { error: tpm });
    const error = await failure(openai(1), request("gpt-4o-mini", "hi"));
    expect(error?.code).toBe("llm_rate_limited");
    expect(emu.requests).toHaveLength(2);
  });

  it("is not retried when the refusal comes inside the stream", async () => {
    const message = `Request too large for gpt-4o-mini in organization org-abc on tokens per min (TPM): Limit 30000, Requested 45000. The input or output tokens must be reduced in order to run successfully.`;
    emu.enqueue({ cut: { afterChars: 0, text: "", error: { type: "tokens", message } } }, { text: "Hello." });
    const error = await failure(openai(), request("gpt-4o-mini", "hi"));
    expect(error?.code).toBe("llm_request_too_large");
    expect(error?.userMessage).toContain("about 45,000 tokens; the limit is 30,000 tokens per minute");
    expect(emu.requests).toHaveLength(1);
  });
});

describe("perMinuteExcess reads OpenAI's and compatible servers' wording", () => {
  it("recognises a single request over the limit", () => {
    expect(
      perMinuteExcess(
        "Request too large for gpt-4.1-2025-04-14 (for limit gpt-4.1) in organization org-x on tokens per min (TPM): Limit 30000, Requested 37313. The input or output tokens must be reduced in order to run successfully.",
      ),
    ).toEqual({ limit: 30_000, requested: 37_313 });
    // Groq's 413, tokens per minute spelled out.
    expect(
      perMinuteExcess(
        "Request too large for model `llama-3.3-70b-versatile` in organization `org_x` service tier `on_demand` on tokens per minute (TPM): Limit 12000, Requested 19804, please reduce your message size and try again.",
      ),
    ).toEqual({ limit: 12_000, requested: 19_804 });
  });

  it("leaves ordinary rate limits and other limits alone", () => {
    expect(perMinuteExcess(ORDINARY_TPM)).toBeUndefined();
    expect(perMinuteExcess("Rate limit reached for requests.")).toBeUndefined();
    expect(
      perMinuteExcess(
        "Rate limit reached for gpt-4o on requests per min (RPM): Limit 500, Used 500, Requested 1.",
      ),
    ).toBeUndefined();
    // Per day: another limit, which a sentence about minutes would misname.
    expect(
      perMinuteExcess(
        "Request too large for gpt-4o-mini on tokens per day (TPD): Limit 200000, Requested 250000.",
      ),
    ).toBeUndefined();
    expect(perMinuteExcess("on tokens per min (TPM): Limit 30000, Requested 2000.")).toBeUndefined();
  });
});
