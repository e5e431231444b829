import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator, o200kTokens } from "../../test/emulators/llm/index.js";
import { FunctionHub } from "../../test/support/scripted.js";
import { configSchema } from "../config.js";
import type { AgentEvent } from "../core/events.js";
import { newSession, type SessionRepository } from "../store/sessions.js";
import { Agent } from "./agent.js";
import { answerTokens, MIN_ANSWER_TOKENS, promptBudget, tokenizerMargin } from "./answer-room.js";
import { emulatedProvider } from "./providers/emulator-setup.test-helper.js";

const MODEL = "claude-haiku-5-5";
/** As vLLM names a model it serves. */
const LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
const WINDOW = 20_000;
const RESERVE = 6_000;

let emulator: LlmEmulator;
beforeAll(async () => {
  // Claude's tokenizer, as it often counts English prose: 30 % above o200k (and a 32k
  // vocabulary, as Llama 2's or Mistral 7B's, code).
  emulator = await LlmEmulator.start({
    contextWindows: { [MODEL]: WINDOW, [LLAMA]: WINDOW },
    countTokens: (text) => Math.ceil(o200kTokens(text) * 1.3),
  });
});
afterEach(() => emulator.reset());
afterAll(() => emulator.close());

const agent = (reserve = RESERVE, hub = new FunctionHub({})) =>
  new Agent({
    config: configSchema.parse({
      llm: { provider: "anthropic", model: MODEL },
      modelSettings: { [MODEL]: { contextWindow: WINDOW, maxOutputTokens: reserve } },
    }),
    hub,
    providerFor: () => emulatedProvider(emulator, "anthropic", { apiKey: "sk-ant-test-room" }),
    sessions: {} as SessionRepository,
  });

/** An agent on the emulator as an OpenAI-compatible server (vLLM's), serving `model`. */
const compatible = (model: string, settings: Record<string, unknown> = {}) =>
  new Agent({
    config: configSchema.parse({
      llm: { provider: "openai", model },
      modelSettings: { [model]: { contextWindow: WINDOW, maxOutputTokens: RESERVE, ...settings } },
    }),
    hub: new FunctionHub({}),
    providerFor: () => emulatedProvider(emulator, "openai", { apiKey: "sk-test-room" }),
    sessions: {} as SessionRepository,
  });

/** Runs one turn of `text` to its end; returns its error events. */
async function turn(run: Agent, session: ReturnType<typeof newSession>, text: string) {
  const events: AgentEvent[] = [];
  for await (const event of run.runTurn({
    session,
    user: { id: "U1" },
    text,
    platform: "console",
    channel: "local",
    signal: new AbortController().signal,
  })) {
    events.push(event);
  }
  return events.filter((e) => e.type === "error");
}

const report =
  "The quarterly report covers revenue growth across all regions, while operating costs remained stable despite new hiring in engineering and support. ";

describe("the output an Anthropic turn asks for", () => {
  it("leaves the window room for a prompt near its budget, which Claude counts larger than o200k", async () => {
    const session = newSession("console:local");
    // About 12,000 o200k tokens: within the 14,000 the window leaves beside the reserve.
    session.messages.push(
      { role: "user", content: `Keep this in mind:\n${report.repeat(520)}` },
      { role: "assistant", content: "Noted." },
    );
    emulator.enqueue({ text: "Revenue grew in every region." });
    const events: AgentEvent[] = [];
    for await (const event of agent().runTurn({
      session,
      user: { id: "U1" },
      text: "What did the report say?",
      platform: "console",
      channel: "local",
      signal: new AbortController().signal,
    })) {
      events.push(event);
    }
    expect(events.filter((e) => e.type === "error")).toEqual([]);
    const sent = emulator.requests.at(-1);
    const asked = sent?.body.max_tokens as number;
    const prompt = sent?.promptTokens ?? 0;
    // The whole reserve would not have fitted beside the prompt as Claude counts it.
    expect(prompt + RESERVE).toBeGreaterThan(WINDOW);
    expect(prompt + asked).toBeLessThanOrEqual(WINDOW);
    expect(asked).toBeGreaterThanOrEqual(MIN_ANSWER_TOKENS);
  });

  it("asks for the whole reserve when the prompt leaves room for it", async () => {
    const session = newSession("console:short");
    emulator.enqueue({ text: "Hello." });
    for await (const _ of agent().runTurn({
      session,
      user: { id: "U1" },
      text: "Hi",
      platform: "console",
      channel: "local",
      signal: new AbortController().signal,
    })) {
      // drained for the request it makes
    }
    expect(emulator.requests.at(-1)?.body.max_tokens).toBe(RESERVE);
  });
});

describe("an Anthropic turn with a small output reserve", () => {
  const SMALL = 2_000;

  it("keeps a history that fits beside the reserve in o200k to what fits as Claude counts it", async () => {
    const session = newSession("console:small");
    // About 16,000 o200k tokens: within the 18,000 the window leaves beside a 2,000 reserve,
    // about 20,800 as Claude counts it.
    session.messages.push(
      { role: "user", content: `Keep this in mind:\n${report.repeat(690)}` },
      { role: "assistant", content: "Noted." },
    );
    emulator.enqueue({ text: "Revenue grew." });
    expect(await turn(agent(SMALL), session, "What did the report say?")).toEqual([]);
    const sent = emulator.requests.at(-1);
    const asked = sent?.body.max_tokens as number;
    expect((sent?.promptTokens ?? 0) + asked).toBeLessThanOrEqual(WINDOW);
    expect(asked).toBeGreaterThanOrEqual(Math.min(SMALL, MIN_ANSWER_TOKENS));
  });

  it("holds a later step, grown by a tool's long result, to what fits as Claude counts it", async () => {
    const hub = new FunctionHub({ docs__read: () => report.repeat(690) });
    emulator.enqueue(
      { toolCalls: [{ name: "docs__read", arguments: {} }] },
      { text: "It is about revenue." },
    );
    const session = newSession("console:small-steps");
    expect(await turn(agent(SMALL, hub), session, "Read the report and sum it up.")).toEqual([]);
    expect(hub.calls).toHaveLength(1);
    for (const sent of emulator.requests.slice(-2)) {
      expect((sent.promptTokens ?? 0) + (sent.body.max_tokens as number)).toBeLessThanOrEqual(WINDOW);
    }
  });
});

describe("a model not OpenAI's on an OpenAI-compatible server", () => {
  it("keeps a prompt near its budget and max_tokens inside the window as the model's tokenizer counts", async () => {
    const session = newSession("console:llama");
    // About 12,000 o200k tokens: within the 14,000 the window leaves beside the reserve.
    session.messages.push(
      { role: "user", content: `Keep this in mind:\n${report.repeat(520)}` },
      { role: "assistant", content: "Noted." },
    );
    emulator.enqueue({ text: "Revenue grew in every region." });
    expect(await turn(compatible(LLAMA), session, "What did the report say?")).toEqual([]);
    const sent = emulator.requests.at(-1);
    const asked = sent?.body.max_tokens as number;
    expect((sent?.promptTokens ?? 0) + RESERVE).toBeGreaterThan(WINDOW);
    expect((sent?.promptTokens ?? 0) + asked).toBeLessThanOrEqual(WINDOW);
    expect(asked).toBeGreaterThanOrEqual(MIN_ANSWER_TOKENS);
  });

  it("gets a margin, named as Ollama, vLLM or a gateway names it", () => {
    const config = configSchema.parse({});
    for (const model of [
      "llama3.1:8b",
      LLAMA,
      "mistralai/Mistral-7B-Instruct-v0.3",
      "qwen2.5-coder:32b",
      "Qwen/Qwen3-30B-A3B",
      "gemma3:27b",
      "olmo2:13b",
    ]) {
      expect(tokenizerMargin(config, model, "openai"), model).toBeGreaterThanOrEqual(0.25);
    }
    expect(tokenizerMargin(config, "anthropic/claude-sonnet-4", "openai")).toBe(
      tokenizerMargin(config, "claude-sonnet-4", "anthropic"),
    );
  });

  it("is none for OpenAI's own models, dated, fine-tuned or through a gateway, which o200k counts", () => {
    const config = configSchema.parse({});
    for (const model of [
      "gpt-4o-mini",
      "gpt-4.1-2025-04-14",
      "gpt-5",
      "chatgpt-4o-latest",
      "o1",
      "o3-mini",
      "o4-mini",
      "openai/gpt-4o",
      "ft:gpt-4o-mini-2024-07-18:acme::abc123",
      "gpt-oss:20b",
    ]) {
      expect(tokenizerMargin(config, model, "openai"), model).toBeUndefined();
    }
    expect(promptBudget(20_000, 2_000, tokenizerMargin(config, "gpt-4o", "openai"))).toBe(18_000);
  });

  it("is the model's modelSettings.tokenizerMargin where one is set, 0 for o200k's own count", () => {
    const config = configSchema.parse({
      modelSettings: {
        "llama3.1:8b": { tokenizerMargin: 0.1 },
        "qwen2.5:7b": { tokenizerMargin: 0 },
        "gpt-4o": { tokenizerMargin: 0.2 },
        "claude-sonnet-4": { tokenizerMargin: 0.5 },
      },
    });
    expect(tokenizerMargin(config, "llama3.1:8b", "openai")).toBe(0.1);
    expect(tokenizerMargin(config, "qwen2.5:7b", "openai")).toBeUndefined();
    expect(tokenizerMargin(config, "gpt-4o", "openai")).toBe(0.2);
    expect(tokenizerMargin(config, "claude-sonnet-4", "anthropic")).toBe(0.5);
  });

  it("asks for the output its modelSettings.tokenizerMargin leaves, not the default's", async () => {
    const asked = async (run: Agent) => {
      const session = newSession("console:llama-set");
      session.messages.push(
        { role: "user", content: `Keep this in mind:\n${report.repeat(520)}` },
        { role: "assistant", content: "Noted." },
      );
      emulator.enqueue({ text: "Revenue grew." });
      expect(await turn(run, session, "What did the report say?")).toEqual([]);
      return emulator.requests.at(-1)?.body.max_tokens as number;
    };
    const byDefault = await asked(compatible(LLAMA));
    expect(await asked(compatible(LLAMA, { tokenizerMargin: 0.5 }))).toBeLessThan(byDefault);
  });
});

describe("the output a step asks for", () => {
  const room = { contextWindow: 10_000, toolsTokens: 0, margin: 0.35 };
  const history = (words: number) => [{ role: "user" as const, content: "word ".repeat(words) }];

  it("is never more than the window has left beside the prompt counted with the margin, nor the reserve", () => {
    expect(answerTokens(room, 4_000, "", history(10))).toBe(4_000);
    const left = answerTokens(room, 4_000, "", history(5_000));
    expect(left).toBeLessThan(4_000);
    expect(left).toBeGreaterThan(MIN_ANSWER_TOKENS);
    expect(answerTokens(room, 4_000, "", history(6_700))).toBeLessThan(MIN_ANSWER_TOKENS);
    expect(answerTokens(room, 4_000, "", history(9_000))).toBe(1);
    expect(answerTokens(room, 500, "", history(10))).toBe(500);
    const config = configSchema.parse({});
    expect(tokenizerMargin(config, MODEL, "anthropic")).toBeGreaterThan(0.3);
    expect(tokenizerMargin(config, "gpt-4o", "openai")).toBeUndefined();
  });
});

describe("the prompt's budget", () => {
  it("is the window less the reserve where o200k is the provider's count, as OpenAI's", () => {
    expect(promptBudget(20_000, 2_000, undefined)).toBe(18_000);
  });

  it("leaves Anthropic's least answer room beside the prompt counted with the margin", () => {
    const margin = tokenizerMargin(configSchema.parse({}), MODEL, "anthropic") ?? 0;
    for (const reserve of [500, 2_000, 6_000]) {
      const budget = promptBudget(20_000, reserve, margin);
      expect(budget).toBeLessThanOrEqual(20_000 - reserve);
      expect(Math.ceil(budget * (1 + margin)) + Math.min(reserve, MIN_ANSWER_TOKENS)).toBeLessThanOrEqual(
        20_000,
      );
    }
    // A large reserve is the bound, as before: the answer shrinks instead.
    expect(promptBudget(20_000, 6_000, margin)).toBe(14_000);
    // A request that asks for its whole answer whatever the prompt leaves it.
    const whole = promptBudget(20_000, 6_000, margin, 6_000);
    expect(Math.ceil(whole * (1 + margin)) + 6_000).toBeLessThanOrEqual(20_000);
  });
});
