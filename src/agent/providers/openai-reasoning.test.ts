import { describe, expect, it, vi } from "vitest";
import { useLlmEmulator } from "./emulator-setup.test-helper.js";
import { OpenAIProvider } from "./openai.js";
import { outputLimitParam } from "./openai-params.js";
import type { ModelRequest } from "./provider.js";

/**
 * The official hosts' requests go to the emulator instead: the provider still sees (and
 * chooses its parameters by) the base URL it was given, and the real SDK makes the request.
 */
const route = vi.hoisted(() => ({ to: "" }));
vi.mock("./model-fetch.js", async (original) => {
  const real = await original<typeof import("./model-fetch.js")>();
  const OFFICIAL = /^https:\/\/(api\.openai\.com\/v1|[\w-]+\.openai\.azure\.com\/openai\/v1)/;
  return {
    ...real,
    modelFetch: (input: string | URL | Request, init?: RequestInit) =>
      real.modelFetch(typeof input === "string" ? input.replace(OFFICIAL, route.to) : input, init),
  };
});

const emulator = useLlmEmulator();

/** The body `model` was sent with through `baseURL`, asked for 300 tokens at temperature 0.2. */
async function sent(baseURL: string | undefined, model: string) {
  route.to = emulator().openaiBaseUrl;
  const provider = new OpenAIProvider({ apiKey: "sk-test", baseURL, maxRetries: 0, timeoutMs: 10_000 });
  const req: ModelRequest = {
    model,
    system: "",
    messages: [{ role: "user", content: "hi" }],
    tools: [],
    maxOutputTokens: 300,
    temperature: 0.2,
  };
  const events = [];
  for await (const event of provider.stream(req, new AbortController().signal)) events.push(event);
  expect(events.at(-1)).toEqual({ type: "stop", reason: "end" });
  const body = emulator().requests.at(-1)?.body ?? {};
  return { limit: body.max_completion_tokens ?? body.max_tokens, ...pick(body) };
}

const pick = (body: Record<string, unknown>) => ({
  max_tokens: "max_tokens" in body,
  max_completion_tokens: "max_completion_tokens" in body,
  temperature: body.temperature,
});

describe("the OpenAI provider's output limit and temperature, by endpoint and model", () => {
  it("answers o3 and gpt-5 with OPENAI_BASE_URL set to OpenAI's own address", async () => {
    for (const model of ["o3", "gpt-5-mini"]) {
      expect(await sent("https://api.openai.com/v1", model)).toEqual({
        limit: 300,
        max_tokens: false,
        max_completion_tokens: true,
        temperature: undefined,
      });
    }
  });

  it("asks Azure OpenAI with max_completion_tokens, also for a model that takes a temperature", async () => {
    expect(await sent("https://contoso.openai.azure.com/openai/v1", "gpt-4o")).toEqual({
      limit: 300,
      max_tokens: false,
      max_completion_tokens: true,
      temperature: 0.2,
    });
  });

  it("asks OpenAI's reasoning models behind a proxy with max_completion_tokens, and no temperature", async () => {
    expect(await sent(emulator().openaiBaseUrl, "o4-mini")).toEqual({
      limit: 300,
      max_tokens: false,
      max_completion_tokens: true,
      temperature: undefined,
    });
  });

  it("keeps max_tokens and the temperature for any other model on an OpenAI-compatible server", async () => {
    expect(await sent(emulator().openaiBaseUrl, "llama3.1:8b")).toEqual({
      limit: 300,
      max_tokens: true,
      max_completion_tokens: false,
      temperature: 0.2,
    });
  });

  it("chooses by the host, and by the model id as a gateway spells it", () => {
    expect(outputLimitParam("https://API.openai.com/v1/", "gpt-4o")).toBe("max_completion_tokens");
    expect(outputLimitParam("https://openrouter.ai/api/v1", "openai/gpt-5-mini")).toBe(
      "max_completion_tokens",
    );
    expect(outputLimitParam("https://openrouter.ai/api/v1", "openai/gpt-4o")).toBe("max_tokens");
    expect(outputLimitParam("https://api.openai.com.example.net/v1", "gpt-4o")).toBe("max_tokens");
    expect(outputLimitParam("http://127.0.0.1:11434/v1", "llama3.1:8b")).toBe("max_tokens");
  });
});
