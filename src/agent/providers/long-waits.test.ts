import { describe, expect, it } from "vitest";
import { emulatedProvider, streamFailure, useLlmEmulator } from "./emulator-setup.test-helper.js";
import { waitAsked, waitText } from "./long-waits.js";
import type { ModelRequest } from "./provider.js";

const emulator = useLlmEmulator();

const request = (model: string): ModelRequest => ({
  model,
  system: "",
  messages: [{ role: "user", content: "hi" }],
  tools: [],
});
const openai = () => emulatedProvider(emulator(), "openai", { apiKey: "sk-test", maxRetries: 3 });
const anthropic = () => emulatedProvider(emulator(), "anthropic", { apiKey: "sk-ant-test", maxRetries: 3 });

const OPENAI_TPD =
  "Rate limit reached for gpt-4o-mini in organization org-abc on tokens per day (TPD): Limit 2000000, Used 1999990, Requested 512. Please try again in 2h14m5.12s. Visit https://platform.openai.com/account/rate-limits to learn more.";

describe("a refusal that asks for a long wait", () => {
  // Without the guard each of these would sleep as long as asked (an hour) before trying again.
  it("is not retried on OpenAI's 429 with an hour's Retry-After, and the person is told when", async () => {
    emulator().setResponder(() => ({ error: { status: 429, retryAfter: 3_600 } }));
    const error = await streamFailure(openai(), request("gpt-4o-mini"));
    expect(emulator().requests).toHaveLength(1);
    expect(error?.code).toBe("llm_rate_limited");
    expect(error?.userMessage).toBe(
      "The language model is rate-limited and will take requests again in about 1 h 0 min, so I did not wait. Please try again then, or ask an operator to raise the account's limits.",
    );
  });

  it("reads OpenAI's daily limit from its message when no header gives the wait", async () => {
    emulator().setResponder(() => ({ error: { status: 429, message: OPENAI_TPD } }));
    const error = await streamFailure(openai(), request("gpt-4o-mini"));
    expect(emulator().requests).toHaveLength(1);
    expect(error?.userMessage).toBe(
      "The language model is rate-limited (its daily limit is used up) and will take requests again in about 2 h 15 min, so I did not wait. Please try again then, or ask an operator to raise the account's limits.",
    );
  });

  it("is not retried on Anthropic's 429 or 529 with minutes of Retry-After", async () => {
    emulator().enqueue(
      { error: { status: 429, retryAfter: 120 } },
      { error: { status: 529, retryAfter: 600 } },
    );
    const limited = await streamFailure(anthropic(), request("claude-haiku-5-5"));
    expect(limited?.code).toBe("llm_rate_limited");
    expect(limited?.userMessage).toContain("will take requests again in about 2 min, so I did not wait");
    const overloaded = await streamFailure(anthropic(), request("claude-haiku-5-5"));
    expect(overloaded?.code).toBe("llm_unavailable");
    expect(overloaded?.userMessage).toBe(
      "The language model service is unavailable (HTTP 529) and asks to be tried again in about 10 min, so I did not wait. Please try again then.",
    );
    expect(emulator().requests).toHaveLength(2);
  });

  it("still waits out a short Retry-After and tries again", async () => {
    emulator().enqueue({ error: { status: 429, retryAfter: 1 } }, { text: "Hello." });
    expect(await streamFailure(openai(), request("gpt-4o-mini"))).toBeUndefined();
    expect(emulator().requests).toHaveLength(2);
  });
});

describe("waitAsked", () => {
  it("reads retry-after-ms, retry-after in seconds or as a date, then the message's words", () => {
    expect(waitAsked(new Headers({ "retry-after-ms": "1500", "retry-after": "99" }))).toBe(1_500);
    expect(waitAsked(new Headers({ "retry-after": "120" }))).toBe(120_000);
    const date = new Date(Date.now() + 600_000).toUTCString();
    expect(waitAsked(new Headers({ "retry-after": date }))).toBeGreaterThan(590_000);
    expect(waitAsked(new Headers(), "Please try again in 6m0s.")).toBe(360_000);
    expect(waitAsked(new Headers(), "Please try again in 20ms.")).toBe(20);
    expect(waitAsked(new Headers(), "Please try again later.")).toBeUndefined();
    expect(waitAsked(new Headers({ "retry-after": "0" }))).toBeUndefined();
  });

  it("says a wait rounded up, in seconds, minutes or hours", () => {
    expect(waitText(31_200)).toBe("32 s");
    expect(waitText(120_000)).toBe("2 min");
    expect(waitText(8_045_120)).toBe("2 h 15 min");
  });
});

describe("a Stop during a Retry-After's wait", () => {
  for (const kind of ["openai", "anthropic"] as const)
    it(`ends the ${kind} request at once, not when the wait is over`, async () => {
      emulator().setResponder(() => ({ error: { status: 429, retryAfter: 20 } }));
      const provider = kind === "openai" ? openai() : anthropic();
      const stop = new AbortController();
      setTimeout(() => stop.abort(), 300);
      const started = Date.now();
      const req = request(kind === "openai" ? "gpt-4o-mini" : "claude-haiku-5-5");
      await expect(
        (async () => {
          for await (const _ of provider.stream(req, stop.signal)) {
            // drained
          }
        })(),
      ).rejects.toMatchObject({ code: "llm_aborted" });
      // Well under the 20 s asked; the SDK alone slept them out (a fixed bound, not a timing target).
      expect(Date.now() - started).toBeLessThan(10_000);
    }, 30_000);
});
