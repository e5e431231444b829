import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator } from "../../test/emulators/llm/index.js";
import { createProvider } from "./providers/index.js";
import type { Provider } from "./providers/provider.js";
import { cleanTitle, DEFAULT_TITLE, fallbackTitle, makeTitle } from "./title.js";

let emu: LlmEmulator;
let openai: Provider;
let anthropic: Provider;

beforeAll(async () => {
  emu = await LlmEmulator.start();
  openai = createProvider({
    provider: "openai",
    apiKey: "sk-test-title",
    baseURL: emu.openaiBaseUrl,
    maxRetries: 0,
    timeoutMs: 10_000,
  });
  anthropic = createProvider({
    provider: "anthropic",
    apiKey: "sk-ant-test-title",
    baseURL: emu.anthropicBaseUrl,
    maxRetries: 0,
    timeoutMs: 10_000,
  });
});
afterEach(() => emu.reset());
afterAll(() => emu.close());

describe("cleanTitle", () => {
  it.each([
    ['"Python List Sorting Methods"', "Python List Sorting Methods"],
    ["**Deploying to Kubernetes.**", "Deploying to Kubernetes"],
    ["# Title: Fixing the CI build!", "Fixing the CI build"],
    ["Title: «Réunion budget 2025»", "Réunion budget 2025"],
    ["`npm` install errors?!", "npm install errors"],
    ["「東京の天気」。", "東京の天気"],
    ["<think>the user asks about taxes</think>\nTax Filing Deadlines", "Tax Filing Deadlines"],
    ["\n\n  Renaming my_var_name in C#  \nsecond line", "Renaming my_var_name in C#"],
    ["[Release notes](https://example.com) for v2.1", "Release notes for v2.1"],
    ["Don't Panic", "Don't Panic"],
  ])("cleans %j to %j", (raw, clean) => {
    expect(cleanTitle(raw)).toBe(clean);
  });

  it("keeps titles to 100 characters, cut at a word", () => {
    const title = cleanTitle("word ".repeat(60));
    expect(title.length).toBeLessThanOrEqual(100);
    expect(title.endsWith("word")).toBe(true);
  });
});

describe("fallbackTitle", () => {
  it("takes the first six words of the message without mentions or links", () => {
    expect(fallbackTitle("<@U123> can you check https://x.io/a why the nightly build fails on arm64?")).toBe(
      "can you check why the nightly",
    );
  });

  it("has a default for a message with no words", () => {
    expect(fallbackTitle("   ")).toBe(DEFAULT_TITLE);
    expect(fallbackTitle("<@U1>")).toBe(DEFAULT_TITLE);
  });
});

describe("makeTitle", () => {
  const exchange = { user: "How do I sort a list in Python?", assistant: "Use sorted() or list.sort()." };

  it("asks the title model over OpenAI and returns the cleaned title", async () => {
    emu.enqueue({ text: '"Sorting Lists in Python."' });
    const title = await makeTitle(exchange, { provider: openai, model: "gpt-4o-mini" });
    expect(title).toBe("Sorting Lists in Python");
    const req = emu.requests.at(-1);
    expect(req?.model).toBe("gpt-4o-mini");
    expect(req?.toolNames).toEqual([]);
    expect(JSON.stringify(req?.messages)).toContain("sort a list in Python");
    expect(req?.system).toMatch(/at most 6 words/);
  });

  it("leaves out the reasoning of a model whose template opened <think>, and keeps a title that names the tag", async () => {
    emu.enqueue({
      text: "The user asks how to sort a list. A short title.</think>\n\nSorting Lists in Python",
    });
    expect(await makeTitle(exchange, { provider: openai, model: "qwq-32b" })).toBe("Sorting Lists in Python");
    emu.enqueue({ text: "Hiding DeepSeek's <think> output" });
    expect(await makeTitle(exchange, { provider: openai, model: "gpt-4o-mini" })).toBe(
      "Hiding DeepSeek's <think> output",
    );
  });

  it("works over the Anthropic protocol too", async () => {
    emu.enqueue({ text: "Python sorting basics" });
    const title = await makeTitle(exchange, { provider: anthropic, model: "claude-haiku-4-5" });
    expect(title).toBe("Python sorting basics");
    expect(emu.requests.at(-1)?.protocol).toBe("anthropic");
  });

  it("sends at most 1,000 characters of the first exchange", async () => {
    emu.enqueue({ text: "Long Question" });
    await makeTitle(
      { user: "ζ".repeat(5_000), assistant: "ж".repeat(5_000) },
      { provider: openai, model: "gpt-4o-mini" },
    );
    const sent = JSON.stringify(emu.requests.at(-1)?.messages);
    const userChars = sent.match(/ζ/g)?.length ?? 0;
    const answerChars = sent.match(/ж/g)?.length ?? 0;
    expect(userChars + answerChars).toBeLessThanOrEqual(1_000);
    expect(userChars).toBeGreaterThan(0);
    expect(answerChars).toBeGreaterThan(0);
  });

  it("keeps at most six words of a long answer", async () => {
    emu.enqueue({ text: "A very long title that the model should not have written" });
    expect(await makeTitle(exchange, { provider: openai, model: "gpt-4o-mini" })).toBe(
      "A very long title that the",
    );
  });

  it("falls back to the first words of the message when the model fails", async () => {
    emu.enqueue({ error: { status: 500 } });
    const title = await makeTitle(exchange, { provider: openai, model: "gpt-4o-mini" });
    expect(title).toBe("How do I sort a list");
  });

  it("falls back when the model answers with nothing usable", async () => {
    emu.enqueue({ text: '  "".  ' });
    expect(await makeTitle(exchange, { provider: openai, model: "gpt-4o-mini" })).toBe(
      "How do I sort a list",
    );
  });

  it("falls back instead of waiting when the caller aborts", async () => {
    emu.enqueue({ text: "Too late for this", delayMs: 2_000, chunkSize: 1 });
    const controller = new AbortController();
    const pending = makeTitle(exchange, {
      provider: openai,
      model: "gpt-4o-mini",
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 50);
    expect(await pending).toBe("How do I sort a list");
  });
});
