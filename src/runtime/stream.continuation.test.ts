import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { readableEnd } from "./continuation.js";
import { WriteScheduler } from "./scheduler/write-scheduler.js";
import { joinParts } from "./split.js";
import { FakeChannel, prng } from "./stream.fake.js";
import { StreamWriter } from "./stream.js";
import { tablesToCodeBlocks } from "./tables.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

/** Slack's shape: edits draw on a workspace-wide bucket, posts on the channel's own. */
function slackLike() {
  const scheduler = new WriteScheduler({ limitOf: () => undefined });
  const channel = Object.assign(new FakeChannel({ prefix: "c-", latencyMs: 20 }), {
    buckets: (kind: string) => (kind === "post" ? ["post:C1"] : ["update:C1", "update:*"]),
  });
  return { scheduler, channel };
}

/**
 * Writes `shown`, lets it reach the message, closes the edit budget for a minute, writes
 * `rest` and finishes: the answer goes on in a new message (see continueIfEditsWait).
 */
async function continued(shown: string, rest: string[], render?: (md: string) => string) {
  const { scheduler, channel } = slackLike();
  const writer = new StreamWriter(channel, {
    limit: 3900,
    intervalMs: 200,
    scheduler,
    ...(render ? { render } : {}),
  });
  writer.write(shown);
  await vi.advanceTimersByTimeAsync(50);
  scheduler.pause("update:*", 60_000);
  for (const delta of rest) {
    writer.write(delta);
    await vi.advanceTimersByTimeAsync(300);
  }
  const done = writer.finish();
  await vi.advanceTimersByTimeAsync(3_000);
  const posted = channel.callsOf("post").filter((c) => c.ok);
  await vi.runAllTimersAsync();
  await done;
  return { channel, posted, writes: channel.calls.filter((c) => c.ok).map((c) => c.op) };
}

describe("StreamWriter going on in a new message when edits are spent", () => {
  it("moves a half-written table row into the new message, which repeats the table's header", async () => {
    const { channel, posted, writes } = await continued(
      "Intro.\n\n| Name | Value |\n|---|---|\n| a | 1 |\n| bb | 2",
      ["2 |\n| c | 3 |\n\nSee the **impor", "tant** [guide](https://example.com/guide)."],
      tablesToCodeBlocks,
    );
    expect(channel.texts()).toEqual([
      tablesToCodeBlocks("Intro.\n\n| Name | Value |\n|---|---|\n| a | 1 |\n"),
      tablesToCodeBlocks(
        "| Name | Value |\n|---|---|\n| bb | 22 |\n| c | 3 |\n\nSee the **important** [guide](https://example.com/guide).",
      ),
    ]);
    // The first message never showed the row half written: no edit has to mend it.
    expect(posted).toHaveLength(2);
    expect(writes).toEqual(["post", "post"]);
  });

  it("never leaves a message ending in a bold run, a link or a code span the next message finishes", async () => {
    for (const [shown, kept] of [
      ["Read the **very impor", "Read the "],
      ["See [the guide](https://exa", "See "],
      ["- an item with `co", "- an item with "],
    ] as const) {
      const rest = "ending, and the rest of it.";
      const { channel } = await continued(shown, [rest]);
      expect(channel.texts()).toEqual([kept, shown.slice(kept.length) + rest]);
    }
    // Nor on a fence line still being written: the code block it opens starts the next message.
    const { channel } = await continued("Code:\n``", ["`ts\nconst a = 1;\n```\nDone."]);
    expect(channel.texts()).toEqual(["Code:\n", "```ts\nconst a = 1;\n```\nDone."]);
  });

  it("shows a message that ends at a line break or between words whole, and goes on after it", async () => {
    for (const shown of ["First line.\nSecond line.\n", "Several words, then "]) {
      const { channel } = await continued(shown, ["the rest."]);
      expect(channel.texts()).toEqual([shown, "the rest."]);
      expect(channel.callsOf("edit")).toEqual([]);
    }
  });

  it("goes on where the message stops in a plain word or a code line, or where nothing is safe", async () => {
    const word = await continued("The first words of the ans", ["wer, and the rest."]);
    expect(word.channel.texts()).toEqual(["The first words of the ans", "wer, and the rest."]);
    const code = await continued("Code:\n```ts\nconst a", [" = 1;\n```\nDone."]);
    expect(joinParts(code.channel.texts())).toBe("Code:\n```ts\nconst a = 1;\n```\nDone.");
    expect(code.channel.texts()[1]).toBe("```ts\n = 1;\n```\nDone.");
    const bold = await continued("**Pneumonoultramicroscopic", ["silicovolcanoconiosis**"]);
    expect(bold.channel.texts()).toEqual(["**Pneumonoultramicroscopic", "silicovolcanoconiosis**"]);
  });

  it("joins to exactly the answer wherever the edits stopped (300 random answers)", async () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rand = prng(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
      const pieces = Array.from({ length: 5 + Math.floor(rand() * 30) }, () =>
        pick([
          "word ",
          "**bold** ",
          "`code` ",
          "[a](https://x.y/z) ",
          "😀 ",
          ".\n",
          "\n\n",
          "\n```ts\nx = 1;\n```\n",
        ]),
      );
      const answer = pieces.join("");
      const at = 1 + Math.floor(rand() * (answer.length - 1));
      if (/[\udc00-\udfff]/.test(answer[at] ?? "")) continue;
      const { channel } = await continued(answer.slice(0, at), [answer.slice(at)]);
      const texts = channel.texts();
      // Whitespace alone after the cut gets no message: both platforms refuse one.
      expect(joinParts(texts).trimEnd(), `seed ${seed}, cut at ${at}`).toBe(answer.trimEnd());
      // The first message leaves no bold run, code span or link open outside its code blocks.
      const prose = texts[0]!.replace(/^```ts\n[\s\S]*?\n```( |$)/gm, "");
      if (texts.length > 1 && /\S\s/.test(answer.slice(0, at))) {
        expect(prose.split("**").length % 2, `seed ${seed}, cut at ${at}`).toBe(1);
        expect(prose.split("`").length % 2, `seed ${seed}, cut at ${at}`).toBe(1);
        expect(prose, `seed ${seed}, cut at ${at}`).not.toMatch(/\[[^\]]*$|\]\([^)]*$/);
      }
    }
  });
});

describe("readableEnd", () => {
  it("stops before a code block's opening line or a table row still being written", () => {
    const code = "Intro:\n```t";
    expect(readableEnd(code, 0, code.length, null)).toBe("Intro:\n".length);
    const row = "Text.\n| a b | c d";
    expect(readableEnd(row, 0, row.length, null)).toBe("Text.\n".length);
  });

  it("goes back to the space before a construct left open, not to the paragraph's start", () => {
    const text = `Intro.\n${"many words ".repeat(200)}and a **half-wri`;
    expect(readableEnd(text, 0, text.length, null)).toBe(text.length - "**half-wri".length);
  });
});
