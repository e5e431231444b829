import { countTokens as realCount } from "gpt-tokenizer/encoding/o200k_base";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { configSchema } from "../config.js";
import type { ChatMessage, UserMessage } from "../core/messages.js";
import { buildPrompt, countTokens, messagesTokens, messagesTokensAtMost, tokensAtMost } from "./context.js";
import { needsCompression } from "./memory.js";
import { fitStep } from "./step-budget.js";

// The real encoder, watched: what is encoded, and how often.
const encoded: string[] = [];
vi.mock("gpt-tokenizer/encoding/o200k_base", async (original) => {
  const real = await original<typeof import("gpt-tokenizer/encoding/o200k_base")>();
  return {
    ...real,
    countTokens: (text: string, opts: Parameters<typeof real.countTokens>[1]) => {
      encoded.push(text);
      return real.countTokens(text, opts);
    },
  };
});

beforeEach(() => {
  encoded.length = 0;
});

const user = (content: string): UserMessage => ({ role: "user", content });
const assistant = (content: string): ChatMessage => ({ role: "assistant", content });

/** A thread as the store gives it back: the same texts, new objects every time. */
function thread(name: string, turns: number, words = 120): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 0; i < turns; i++)
    out.push(
      user(`${name} question ${i}: ${"why does the build fail on CI ".repeat(words / 6)}`),
      assistant(`${name} answer ${i}: ${"check the lock file and the node version ".repeat(words / 8)}`),
    );
  return structuredClone(out);
}

describe("token counting", () => {
  it("never counts more tokens than tokensAtMost says, whatever the script", () => {
    const texts = [
      "plain English words, and code: const x = await f(a, b);",
      "日本語のテキストと中文文本",
      "emoji 🎉👩‍👩‍👧‍👦🚀 and combining é",
      "<|endoftext|><|im_start|>system",
      "    indented\n\t\ttabs\r\n",
      Array.from({ length: 2_000 }, (_, i) => String.fromCodePoint(32 + ((i * 7919) % 0x2ffff))).join(""),
    ];
    for (const text of texts)
      expect(realCount(text, { disallowedSpecial: new Set() })).toBeLessThanOrEqual(tokensAtMost(text));
    const messages = [user(texts[0]!), assistant(texts[1]!)];
    expect(messagesTokens(messages)).toBeLessThanOrEqual(messagesTokensAtMost(messages));
  });

  it("builds a prompt that fits three times over without encoding a word, and counts it only when asked", () => {
    const history = thread("fits", 3);
    const current = user("and now?");
    const p = buildPrompt({
      system: "You are Switchboard.",
      history,
      current,
      limits: { contextWindow: 128_000, maxOutputTokens: 4_096 },
      toolsTokens: 500,
    });
    expect(p.messages).toEqual([...history, current]);
    expect(p.omitted).toBe(0);
    expect(encoded).toEqual([]);
    // Read, it is the exact count, as the counted way gives it.
    expect(p.promptTokens).toBe(countTokens(p.system) + 4 + 500 + messagesTokens(p.messages));
  });

  it("counts a thread that comes back from the store once, not at every turn", () => {
    const limits = { contextWindow: 2_000, maxOutputTokens: 500 };
    const first = buildPrompt({ system: "s", history: thread("store", 8), current: user("next"), limits });
    expect(first.omitted).toBeGreaterThan(0);
    const long = encoded.filter((t) => t.length >= 256).length;
    expect(long).toBeGreaterThan(0);
    encoded.length = 0;
    const again = buildPrompt({ system: "s", history: thread("store", 8), current: user("next"), limits });
    expect(again.messages).toEqual(first.messages);
    expect(encoded.filter((t) => t.length >= 256)).toEqual([]);
  });

  it("fits a step, and decides against compression, without encoding when far within the budget", () => {
    const convo = thread("step", 2);
    expect(fitStep("system", convo, 0, 100_000)).toBe(0);
    const config = configSchema.parse({ memory: { keepMessages: 2 } });
    const session = { key: "k", messages: thread("fold", 4), generation: 0, archivedCount: 0 } as never;
    expect(needsCompression(session, config, { contextWindow: 128_000, maxOutputTokens: 4_096 })).toBe(false);
    expect(encoded).toEqual([]);
    // Near the threshold it counts, and still decides right.
    expect(needsCompression(session, config, { contextWindow: 1_000, maxOutputTokens: 200 })).toBe(true);
    expect(encoded.length).toBeGreaterThan(0);
  });
});
