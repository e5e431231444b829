import { describe, expect, it } from "vitest";
import type { Usage } from "../../core/messages.js";
import { emulatedProvider, useLlmEmulator } from "./emulator-setup.test-helper.js";

const emulator = useLlmEmulator();

/** The usage one answer reports through the real SDK of `kind` and the provider. */
async function usageOf(kind: "openai" | "anthropic"): Promise<Usage[]> {
  const provider = emulatedProvider(emulator(), kind, { apiKey: "sk-test-usage" });
  const out: Usage[] = [];
  const req = { model: "m", system: "", messages: [{ role: "user" as const, content: "hi" }], tools: [] };
  for await (const event of provider.stream(req, new AbortController().signal))
    if (event.type === "usage") out.push(event.usage);
  return out;
}

describe("the usage of a prompt the provider partly cached", () => {
  it("counts OpenAI's cached tokens apart, within the prompt's", async () => {
    emulator().enqueue({ text: "ok", usage: { input: 2_000, output: 40, cached: 1_536 } });
    expect(await usageOf("openai")).toEqual([
      { inputTokens: 2_000, outputTokens: 40, cachedInputTokens: 1_536 },
    ]);
  });

  it("counts Anthropic's cache reads and writes apart, within the prompt's", async () => {
    emulator().enqueue({ text: "ok", usage: { input: 2_000, output: 40, cached: 1_200, cacheWrite: 300 } });
    expect(await usageOf("anthropic")).toEqual([
      { inputTokens: 2_000, outputTokens: 40, cachedInputTokens: 1_200, cacheWriteTokens: 300 },
    ]);
  });

  it("reports no cache fields when nothing was cached", async () => {
    emulator().enqueue(
      { text: "ok", usage: { input: 20, output: 4 } },
      { text: "ok", usage: { input: 20, output: 4 } },
    );
    expect(await usageOf("openai")).toEqual([{ inputTokens: 20, outputTokens: 4 }]);
    expect(await usageOf("anthropic")).toEqual([{ inputTokens: 20, outputTokens: 4 }]);
  });
});
