import { afterEach, describe, expect, it, vi } from "vitest";
import { configSchema } from "../config.js";
import { SwitchboardError } from "../core/errors.js";
import type { AssistantMessage, ChatMessage, ToolMessage, UserMessage } from "../core/messages.js";
import { log } from "../log.js";
import {
  buildPrompt,
  countTokens,
  DEFAULT_SYSTEM_PROMPT,
  IMAGE_TOKENS,
  isoWithOffset,
  messagesTokens,
  messageTokens,
  modelLimits,
  renderSystemPrompt,
} from "./context.js";

const config = (over: Record<string, unknown> = {}) => configSchema.parse(over);
const vars = { model: "gpt-4o-mini", platform: "slack", channel: "C1", user: "Ada" };
const user = (content: string): UserMessage => ({ role: "user", content });
const assistant = (content: string): AssistantMessage => ({ role: "assistant", content });
const call = (id: string, args: Record<string, unknown> = { q: id }): AssistantMessage => ({
  role: "assistant",
  content: "",
  toolCalls: [{ id, name: "search__find", arguments: args }],
});
const result = (id: string, content = `result ${id}`): ToolMessage => ({
  role: "tool",
  toolCallId: id,
  name: "search__find",
  content,
});

/** Every tool result in `messages` follows the assistant message that called it. */
function toolResultsFollowTheirCalls(messages: ChatMessage[]): boolean {
  const open = new Set<string>();
  for (const m of messages) {
    if (m.role === "assistant") {
      open.clear();
      for (const c of m.toolCalls ?? []) open.add(c.id);
    } else if (m.role === "tool") {
      if (!open.delete(m.toolCallId)) return false;
    } else if (open.size > 0) return false;
  }
  return open.size === 0;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("renderSystemPrompt", () => {
  it("uses the channel's own prompt for that platform and channel", () => {
    const cfg = config({
      agent: {
        systemPrompt: "global",
        channelPrompts: [
          { platform: "discord", channel: "C1", prompt: "discord C1" },
          { platform: "slack", channel: "C1", prompt: "slack C1 for {{user}}" },
        ],
      },
    });
    expect(renderSystemPrompt(cfg, vars)).toBe("slack C1 for Ada");
    expect(renderSystemPrompt(cfg, { ...vars, platform: "discord" })).toBe("discord C1");
    expect(renderSystemPrompt(cfg, { ...vars, channel: "C2" })).toBe("global");
  });

  it("falls back to the built-in default that asks for the user's language and tool use", () => {
    const text = renderSystemPrompt(config(), vars);
    expect(DEFAULT_SYSTEM_PROMPT).toContain("{{lang}}");
    expect(text).toContain("Answer in the user's language.");
    expect(text).toMatch(/use the available tools/i);
    expect(text).toMatch(/concise/);
    expect(text).not.toContain("{{");
  });

  it("fills model, time with its zone offset, platform, channel, user and lang", () => {
    const cfg = config({
      agent: { systemPrompt: "{{model}}|{{time}}|{{platform}}|{{channel}}|{{ user }}|{{lang}}|{{unknown}}" },
    });
    const time = new Date("2025-03-01T12:34:56Z");
    const text = renderSystemPrompt(cfg, { ...vars, lang: "French", time });
    const [model, iso, platform, channel, who, lang, unknown] = text.split("|");
    expect([model, platform, channel, who, lang]).toEqual(["gpt-4o-mini", "slack", "C1", "Ada", "French"]);
    expect(iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/);
    expect(new Date(iso as string).getTime()).toBe(time.getTime());
    expect(unknown).toBe("{{unknown}}");
  });

  it("writes times in zones with half-hour offsets back to the same instant", () => {
    const t = new Date(Date.UTC(2024, 0, 31, 23, 59, 1));
    expect(new Date(isoWithOffset(t)).getTime()).toBe(t.getTime());
  });
});

describe("modelLimits", () => {
  it("knows common OpenAI and Claude models, dated snapshots and gateway ids", () => {
    const cfg = config();
    expect(modelLimits(cfg, "gpt-4o-mini")).toEqual({ contextWindow: 128_000, maxOutputTokens: 16_384 });
    expect(modelLimits(cfg, "gpt-4o-2024-08-06").contextWindow).toBe(128_000);
    expect(modelLimits(cfg, "gpt-4.1-mini").contextWindow).toBe(1_047_576);
    expect(modelLimits(cfg, "gpt-5-mini").contextWindow).toBe(400_000);
    expect(modelLimits(cfg, "o4-mini").contextWindow).toBe(200_000);
    expect(modelLimits(cfg, "claude-sonnet-4-5-20250929")).toEqual({
      contextWindow: 200_000,
      maxOutputTokens: 64_000,
    });
    expect(modelLimits(cfg, "claude-3-5-haiku-latest").maxOutputTokens).toBe(8_192);
    expect(modelLimits(cfg, "openai/gpt-4o").contextWindow).toBe(128_000);
  });

  it("lets modelSettings override the table", () => {
    const cfg = config({ modelSettings: { "gpt-4o": { contextWindow: 50_000, maxOutputTokens: 2_000 } } });
    expect(modelLimits(cfg, "gpt-4o")).toEqual({ contextWindow: 50_000, maxOutputTokens: 2_000 });
  });

  it("keeps room for input when only a small context window is configured", () => {
    const cfg = config({ modelSettings: { "gpt-4o": { contextWindow: 4_000 } } });
    expect(modelLimits(cfg, "gpt-4o")).toEqual({ contextWindow: 4_000, maxOutputTokens: 1_000 });
  });

  it("gives unknown models a safe default and warns once per model", () => {
    const warn = vi.spyOn(log, "warn");
    const cfg = config();
    expect(modelLimits(cfg, "llama-test-unknown")).toEqual({ contextWindow: 32_000, maxOutputTokens: 4_096 });
    modelLimits(cfg, "llama-test-unknown");
    modelLimits(cfg, "llama-test-unknown");
    const about = (m: string) => warn.mock.calls.filter((c) => JSON.stringify(c[0]).includes(m));
    expect(about("llama-test-unknown")).toHaveLength(1);
    modelLimits(cfg, "other-test-unknown");
    expect(about("other-test-unknown")).toHaveLength(1);
  });
});

describe("token counting", () => {
  it("counts o200k tokens and treats special-token text as plain text", () => {
    expect(countTokens("")).toBe(0);
    expect(countTokens("hello world")).toBe(2);
    expect(countTokens("say <|endoftext|> now")).toBeGreaterThan(2);
  });

  it("counts tool-call arguments, tool results and images in a message", () => {
    const small = call("a", { q: "x" });
    const big = call("b", { q: "x".repeat(10), path: "/srv/data/reports/2024/q3-summary.csv" });
    expect(messageTokens(big)).toBeGreaterThan(messageTokens(small));
    expect(messageTokens(result("a", "one two three"))).toBeGreaterThan(countTokens("one two three"));
    const withImage: UserMessage = {
      ...user("look"),
      parts: [{ type: "image", mimeType: "image/png", data: "AAAA" }],
    };
    expect(messageTokens(withImage) - messageTokens(user("look"))).toBe(IMAGE_TOKENS);
  });

  it("recounts a message whose content changed", () => {
    const m = assistant("short");
    const before = messageTokens(m);
    m.content = "a much longer answer than before, with many more words in it";
    expect(messageTokens(m)).toBeGreaterThan(before);
  });
});

describe("buildPrompt", () => {
  const limits = { contextWindow: 1_000, maxOutputTokens: 200 };

  it("puts the system prompt, then the summary, then pinned context into the system text", () => {
    const p = buildPrompt({
      system: "SYSTEM",
      summary: "SUMMARY-TEXT",
      pinned: "PINNED-TEXT",
      history: [],
      current: user("hi"),
      limits,
    });
    expect(p.system.indexOf("SYSTEM")).toBeLessThan(p.system.indexOf("SUMMARY-TEXT"));
    expect(p.system.indexOf("SUMMARY-TEXT")).toBeLessThan(p.system.indexOf("PINNED-TEXT"));
    expect(p.messages).toEqual([user("hi")]);
  });

  it("sends the whole history when it fits, with the current message last", () => {
    const history = [user("one"), assistant("two"), call("c1"), result("c1"), assistant("three")];
    const current = user("now");
    const p = buildPrompt({ system: "s", history, current, limits });
    expect(p.messages).toEqual([...history, current]);
    expect(p.omitted).toBe(0);
    expect(p.promptTokens).toBe(countTokens(p.system) + 4 + messagesTokens(p.messages));
  });

  it("drops the oldest messages first and stays within the input budget", () => {
    const history: ChatMessage[] = [];
    for (let i = 0; i < 40; i++)
      history.push(user(`question ${i} ${"word ".repeat(20)}`), assistant(`answer ${i}`));
    const p = buildPrompt({ system: "s", history, current: user("latest"), limits, toolsTokens: 50 });
    expect(p.promptTokens).toBeLessThanOrEqual(limits.contextWindow - limits.maxOutputTokens);
    expect(p.messages.at(-2)).toEqual(assistant("answer 39"));
    expect(p.messages[0]?.role).toBe("user");
    expect(p.omitted).toBe(history.length - (p.messages.length - 1));
    expect(p.omitted).toBeGreaterThan(0);
  });

  it("opens with a user message when a summary's fold left an answer first, whole or trimmed", () => {
    // What a fold can leave: the rest of a long tool-using turn, then the next question.
    const history = [call("c1"), result("c1"), assistant("Done: the file is written."), user("thanks")];
    const whole = buildPrompt({
      system: "s",
      summary: "They asked to write a file.",
      history,
      current: user("now"),
      limits,
    });
    expect(whole.messages[0]).toMatchObject({ role: "user", content: expect.stringContaining("summarised") });
    expect(whole.messages.slice(1)).toEqual([...history, user("now")]);
    expect(whole.omitted).toBe(0);
    expect(whole.promptTokens).toBe(countTokens(whole.system) + 4 + messagesTokens(whole.messages));
    // A budget that holds all of it but not much more: trimmed the same way, inside the budget.
    const tight = { contextWindow: whole.promptTokens + 60, maxOutputTokens: 50 };
    const trimmed = buildPrompt({
      system: "s",
      summary: "They asked to write a file.",
      history,
      current: user("now"),
      limits: tight,
      toolsTokens: 5,
    });
    expect(trimmed.messages[0]?.role).toBe("user");
    expect(trimmed.promptTokens).toBeLessThanOrEqual(tight.contextWindow - tight.maxOutputTokens);
  });

  it("keeps the turns before a bulky tool result of an earlier turn, with the result trimmed", () => {
    const big = `BEGIN ${"row of a big table ".repeat(4_000)} END`;
    const history = [
      user("first question"),
      assistant("first answer"),
      user("read the table"),
      call("c1"),
      result("c1", big),
      assistant("The table has 4,000 rows."),
    ];
    const room = { contextWindow: 8_000, maxOutputTokens: 1_000 };
    const p = buildPrompt({ system: "s", history, current: user("and the first one?"), limits: room });
    expect(p.promptTokens).toBeLessThanOrEqual(room.contextWindow - room.maxOutputTokens);
    // Every message is there, the result halved (head and tail kept), not the thread left out.
    expect(p.omitted).toBe(0);
    expect(p.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
    ]);
    const shown = p.messages[4] as ToolMessage;
    expect(shown.content.startsWith("BEGIN")).toBe(true);
    expect(shown.content.endsWith("END")).toBe(true);
    expect(shown.content).toContain("characters left out");
    // The session's message is left whole.
    expect((history[4] as ToolMessage).content).toBe(big);
  });

  it("keeps the turns before a pasted file of an earlier question, with the question trimmed", () => {
    const pasted = `PASTE ${"line of a pasted log ".repeat(4_000)} END`;
    const history = [
      user("first question"),
      assistant("first answer"),
      user(`what is wrong in this log?\n${pasted}`),
      assistant("The log shows a timeout."),
    ];
    const room = { contextWindow: 8_000, maxOutputTokens: 1_000 };
    const p = buildPrompt({ system: "s", history, current: user("and the first one?"), limits: room });
    expect(p.promptTokens).toBeLessThanOrEqual(room.contextWindow - room.maxOutputTokens);
    // The first exchange is still there: the big question is halved, not a wall.
    expect(p.omitted).toBe(0);
    expect(p.messages.map((m) => m.content.slice(0, 14))).toEqual([
      "first question",
      "first answer",
      "what is wrong ",
      "The log shows ",
      "and the first ",
    ]);
    const shown = p.messages[2] as UserMessage;
    expect(shown.content.endsWith("END")).toBe(true);
    expect(shown.content).toContain("characters left out");
    expect((history[2] as UserMessage).content).toContain(pasted);
  });

  it("never separates a tool call from its results, whatever the budget", () => {
    const history: ChatMessage[] = [];
    for (let i = 0; i < 12; i++) {
      history.push(user(`ask ${i}`));
      history.push({
        role: "assistant",
        content: "",
        toolCalls: [
          { id: `x${i}`, name: "fs__read", arguments: { path: `/tmp/${i}` } },
          { id: `y${i}`, name: "fs__list", arguments: { dir: "/tmp" } },
        ],
      });
      history.push(result(`x${i}`, "data ".repeat(i * 5)), result(`y${i}`, "listing"));
      history.push(assistant(`done ${i}`));
    }
    for (let window = 300; window <= 2_000; window += 37) {
      const p = buildPrompt({
        system: "s",
        history,
        current: user("next"),
        limits: { contextWindow: window, maxOutputTokens: 100 },
      });
      expect(p.messages[0]?.role).not.toBe("tool");
      expect(toolResultsFollowTheirCalls(p.messages)).toBe(true);
      expect(p.promptTokens).toBeLessThanOrEqual(window - 100);
    }
  });

  it("leaves out tool results without their call and answers calls left without results", () => {
    const history: ChatMessage[] = [result("lost"), user("q"), call("open"), user("again")];
    const p = buildPrompt({ system: "s", history, current: user("now"), limits });
    expect(p.messages.some((m) => m.role === "tool" && m.toolCallId === "lost")).toBe(false);
    const stub = p.messages.find((m) => m.role === "tool" && m.toolCallId === "open");
    expect(stub).toMatchObject({ isError: true });
    expect(toolResultsFollowTheirCalls(p.messages)).toBe(true);
    expect(p.omitted).toBe(1);
  });

  it("tells the user the sizes when the current message alone does not fit", () => {
    const huge = user("lorem ipsum ".repeat(2_000));
    let caught: unknown;
    try {
      buildPrompt({ system: "s", history: [user("old")], current: huge, limits });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SwitchboardError);
    const err = caught as SwitchboardError;
    expect(err.code).toBe("input_too_large");
    expect(err.userMessage).toContain(messageTokens(huge).toLocaleString("en-US"));
    expect(err.userMessage).toContain("1,000");
    expect(err.userMessage).toMatch(/shorter message or split/);
  });
});
