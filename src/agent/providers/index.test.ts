import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator } from "../../../test/emulators/llm/index.js";
import { configSchema } from "../../config.js";
import { SwitchboardError } from "../../core/errors.js";
import { createProvider, providerFor } from "./index.js";
import type { ModelEvent, ModelRequest, Provider } from "./provider.js";

let emulator: LlmEmulator;
beforeAll(async () => {
  emulator = await LlmEmulator.start();
});
afterAll(async () => {
  await emulator.close();
});

function configError(run: () => unknown): SwitchboardError {
  try {
    run();
  } catch (err) {
    if (err instanceof SwitchboardError) return err;
    throw err;
  }
  throw new Error("expected a SwitchboardError");
}

async function drain(provider: Provider, req: ModelRequest): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const e of provider.stream(req, new AbortController().signal)) events.push(e);
  return events;
}

const fsRead = { name: "fs__read", description: "Read a file.", inputSchema: { type: "object" } };

describe("createProvider", () => {
  it("refuses a missing OpenAI key with config_invalid naming OPENAI_API_KEY", () => {
    const err = configError(() => createProvider({ provider: "openai", maxRetries: 0, timeoutMs: 1000 }));
    expect(err.code).toBe("config_invalid");
    expect(err.message).toContain("OPENAI_API_KEY");
  });

  it("refuses a missing Anthropic key with config_invalid naming ANTHROPIC_API_KEY", () => {
    const err = configError(() =>
      createProvider({
        provider: "anthropic",
        baseURL: emulator.anthropicBaseUrl,
        maxRetries: 0,
        timeoutMs: 1000,
      }),
    );
    expect(err.code).toBe("config_invalid");
    expect(err.message).toContain("ANTHROPIC_API_KEY");
  });

  it("runs against a local OpenAI-compatible server without a key", async () => {
    const provider = createProvider({
      provider: "openai",
      baseURL: emulator.openaiBaseUrl,
      maxRetries: 0,
      timeoutMs: 5000,
    });
    emulator.enqueue({ text: "local hello" });
    const events = await drain(provider, {
      model: "llama3",
      system: "",
      messages: [{ role: "user", content: "hi" }],
      tools: [],
    });
    expect(events.map((e) => (e.type === "text" ? e.delta : "")).join("")).toBe("local hello");
    expect(emulator.requests.at(-1)?.headers.authorization).toBe("Bearer not-needed");
  });
});

describe("providerFor", () => {
  it("uses native tools unless the model is set to the text protocol", async () => {
    const config = configSchema.parse({
      llm: { provider: "openai", maxRetries: 0 },
      modelSettings: { "local-model": { toolProtocol: "text" } },
    });
    const keys = { openaiApiKey: "sk-test-1234567", openaiBaseUrl: emulator.openaiBaseUrl };
    const req = (model: string): ModelRequest => ({
      model,
      system: "sys",
      messages: [{ role: "user", content: "go" }],
      tools: [fsRead],
    });

    emulator.enqueue({ text: "native" });
    await drain(providerFor(config, keys, "gpt-4o-mini"), req("gpt-4o-mini"));
    expect(emulator.requests.at(-1)?.toolNames).toEqual(["fs__read"]);

    emulator.enqueue({ text: '<tool_call>{"name":"fs__read","arguments":{}}</tool_call>' });
    const events = await drain(providerFor(config, keys, "local-model"), req("local-model"));
    expect(emulator.requests.at(-1)?.toolNames).toEqual([]);
    expect(emulator.requests.at(-1)?.system).toContain("### fs__read");
    expect(events.at(-1)).toEqual({ type: "stop", reason: "tool_calls" });
  });

  it("picks Anthropic with its own key and base URL", async () => {
    const config = configSchema.parse({ llm: { provider: "anthropic", maxRetries: 0 } });
    const provider = providerFor(
      config,
      { anthropicApiKey: "sk-ant-test-1234567", anthropicBaseUrl: emulator.anthropicBaseUrl },
      "claude-haiku-5-5",
    );
    expect(provider.name).toBe("anthropic");
    emulator.enqueue({ text: "hi from claude" });
    await drain(provider, {
      model: "claude-haiku-5-5",
      system: "",
      messages: [{ role: "user", content: "x" }],
      tools: [],
    });
    expect(emulator.requests.at(-1)?.protocol).toBe("anthropic");
  });
});
