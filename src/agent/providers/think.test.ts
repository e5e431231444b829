import { describe, expect, it } from "vitest";
import { THINK_HOLD_CHARS, ThinkFilter, thinkHoldFor, withoutThinking } from "./think.js";

/** What the filter shows of `chunks`, and whether it said it started thinking. */
function filtered(chunks: string[], hold = 0): { text: string; thinking: boolean } {
  const filter = new ThinkFilter(hold);
  let text = "";
  let thinking = false;
  for (const chunk of chunks) {
    const out = filter.push(chunk);
    text += out.text;
    thinking ||= out.startedThinking;
  }
  return { text: text + filter.flush(), thinking };
}

/** `text` cut into pieces of 1 to 5 characters, the same way for the same seed. */
function randomChunks(text: string, seed: number): string[] {
  let state = seed;
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return 1 + (state % 5);
  };
  const chunks: string[] = [];
  for (let i = 0; i < text.length; ) {
    const n = next();
    chunks.push(text.slice(i, i + n));
    i += n;
  }
  return chunks;
}

describe("the <think> filter", () => {
  it("hides reasoning at the start of the output, its tags split across chunks", () => {
    expect(filtered(["\n<thi", "nk>secret plan</th", "ink>The answer is 4."])).toEqual({
      text: "The answer is 4.",
      thinking: true,
    });
  });

  it("keeps an answer that mentions the tag, and everything after it", () => {
    const answer =
      "How do I hide DeepSeek's `<think>` output? Strip the span from `<think>` to `</think>` before showing it.";
    for (let seed = 1; seed <= 50; seed++) {
      expect(filtered(randomChunks(answer, seed))).toEqual({ text: answer, thinking: false });
    }
  });

  it("keeps the tag as text once the answer has started, even right after reasoning", () => {
    expect(filtered(["<think>plan</think>Use <think> tags.", " Done."]).text).toBe("Use <think> tags. Done.");
  });

  it("ends reasoning opened by the chat template at a lone </think>", () => {
    const out = filtered(
      ["Okay, the user wants X. Let me reason", "...</thi", "nk>\n\nThe answer is 42."],
      100,
    );
    expect(out).toEqual({ text: "\n\nThe answer is 42.", thinking: true });
  });

  it("releases held text that never closes, at the hold's end and at the stream's end, and loses none", () => {
    const long = "a".repeat(40);
    const filter = new ThinkFilter(30);
    // Within the hold: nothing shown yet.
    expect(filter.push(long.slice(0, 20)).text).toBe("");
    // Past it (and past where a closing tag could still start within it): everything, then as it comes.
    expect(filter.push(long.slice(20)).text).toBe(long);
    expect(filter.push(" and </think> is text now.").text).toBe(" and </think> is text now.");
    expect(filter.flush()).toBe("");

    expect(filtered(["A short answer with no tag at all."], 100).text).toBe(
      "A short answer with no tag at all.",
    );
  });

  it("counts a closing tag that starts within the hold, however the chunks fall", () => {
    const reasoning = "r".repeat(25);
    const stream = `${reasoning}</think>Answer.`;
    for (let seed = 1; seed <= 50; seed++) {
      expect(filtered(randomChunks(stream, seed), 30).text).toBe("Answer.");
      // The tag starts past the hold: the held text was not reasoning.
      expect(filtered(randomChunks(stream, seed), 20).text).toBe(stream);
    }
  });

  it("drops reasoning that never closed, and releases a trailing partial tag as text", () => {
    expect(filtered(["<think>still thinking when the output ran out"]).text).toBe("");
    expect(filtered(["  <thin"]).text).toBe("  <thin");
  });
});

describe("which models start their output inside reasoning", () => {
  it("holds for QwQ, DeepSeek-R1 and its distills, and the Qwen3 Thinking models, by any server's id", () => {
    for (const model of [
      "qwq:32b",
      "Qwen/QwQ-32B",
      "deepseek-r1:14b",
      "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
      "Qwen/Qwen3-30B-A3B-Thinking-2507",
    ])
      expect(thinkHoldFor(model), model).toBe(THINK_HOLD_CHARS);
  });

  it("holds nothing back for other models, whose text streams at once", () => {
    for (const model of ["gpt-4o-mini", "claude-sonnet-4-5", "llama3.1:8b", "qwen3:8b", "deepseek-chat"])
      expect(thinkHoldFor(model), model).toBe(0);
  });
});

describe("withoutThinking, for whole answers (titles, summaries, the router)", () => {
  it("agrees with the stream filter", () => {
    expect(withoutThinking("<think>the user asks about taxes</think>\nTax deadlines")).toBe(
      "\nTax deadlines",
    );
    expect(withoutThinking("Hiding `<think>` output in clients")).toBe("Hiding `<think>` output in clients");
    expect(withoutThinking("The user asks about taxes.</think>\nTax deadlines", "qwq-32b")).toBe(
      "\nTax deadlines",
    );
    expect(withoutThinking("Closing </think> tags in prompts", "gpt-4o-mini")).toBe(
      "Closing </think> tags in prompts",
    );
  });
});
