import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator, o200kTokens } from "../../test/emulators/llm/index.js";
import { FunctionHub } from "../../test/support/scripted.js";
import { configSchema } from "../config.js";
import type { AgentEvent } from "../core/events.js";
import { newSession, type SessionRepository } from "../store/sessions.js";
import { Agent } from "./agent.js";
import { answerTokens, MIN_ANSWER_TOKENS, tokenizerMargin } from "./answer-room.js";
import { emulatedProvider } from "./providers/emulator-setup.test-helper.js";

const MODEL = "claude-haiku-5-5";
const WINDOW = 20_000;
const RESERVE = 6_000;

let emulator: LlmEmulator;
beforeAll(async () => {
  // Claude's tokenizer, as it often counts English prose: 30 % above o200k.
  emulator = await LlmEmulator.start({
    contextWindows: { [MODEL]: WINDOW },
    countTokens: (text) => Math.ceil(o200kTokens(text) * 1.3),
  });
});
afterAll(() => emulator.close());

const agent = () =>
  new Agent({
    config: configSchema.parse({
      llm: { provider: "anthropic", model: MODEL },
      modelSettings: { [MODEL]: { contextWindow: WINDOW, maxOutputTokens: RESERVE } },
    }),
    hub: new FunctionHub({}),
    providerFor: () => emulatedProvider(emulator, "anthropic", { apiKey: "sk-ant-test-room" }),
    sessions: {} as SessionRepository,
  });

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

describe("the output a step asks for", () => {
  const room = { contextWindow: 10_000, toolsTokens: 0, margin: 0.35 };
  const history = (words: number) => [{ role: "user" as const, content: "word ".repeat(words) }];

  it("is never below the floor nor above the reserve, and only Anthropic's count needs the margin", () => {
    expect(answerTokens(room, 4_000, "", history(10))).toBe(4_000);
    const left = answerTokens(room, 4_000, "", history(5_000));
    expect(left).toBeLessThan(4_000);
    expect(left).toBeGreaterThan(MIN_ANSWER_TOKENS);
    expect(answerTokens(room, 4_000, "", history(9_000))).toBe(MIN_ANSWER_TOKENS);
    expect(answerTokens(room, 500, "", history(9_000))).toBe(500);
    expect(tokenizerMargin("anthropic")).toBeGreaterThan(0.3);
    expect(tokenizerMargin("openai")).toBeUndefined();
  });
});
