import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MessageGoneError } from "./message-ops.js";
import { joinParts, openFenceAtEnd } from "./split.js";
import { FakeChannel, prng } from "./stream.fake.js";
import { RateLimitedError, StreamWriter } from "./stream.js";
import { tablesToCodeBlocks } from "./tables.js";

/** Runs the fake clock until the writer has nothing left to do, and returns finish()'s outcome. */
async function settle(done: Promise<void>): Promise<unknown> {
  const outcome = done.then(
    () => null,
    (error: unknown) => error,
  );
  await vi.runAllTimersAsync();
  return outcome;
}

/** Streams `text` in random chunks at random moments, as a model would. */
async function stream(writer: StreamWriter, text: string, seed: number, maxChunk = 80): Promise<void> {
  const rand = prng(seed);
  for (let at = 0; at < text.length; ) {
    const size = 1 + Math.floor(rand() * maxChunk);
    writer.write(text.slice(at, at + size));
    at += size;
    await vi.advanceTimersByTimeAsync(Math.floor(rand() * 30));
  }
}

/** About 20,000 characters of prose and code blocks in three fence styles. */
function longAnswer(): string {
  const rand = prng(7);
  const blocks: string[] = [];
  for (let i = 0; blocks.join("\n\n").length < 20_000; i++) {
    if (i % 3 === 2) {
      const lang = ["ts", "python", ""][i % 3 === 2 ? ((i / 3) % 3) | 0 : 0];
      const lines = Array.from(
        { length: 10 + Math.floor(rand() * 60) },
        (_, k) => `  line_${i}_${k} = ${k * i};`,
      );
      blocks.push(
        i % 4 === 0 ? `~~~${lang}\n${lines.join("\n")}\n~~~` : `\`\`\`${lang}\n${lines.join("\n")}\n\`\`\``,
      );
    } else {
      blocks.push(
        `Paragraph ${i}. ${"Some words to read, with a clause or two. ".repeat(3 + Math.floor(rand() * 20))}`,
      );
    }
  }
  return blocks.join("\n\n");
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe("StreamWriter", () => {
  it("coalesces 100 one-character writes within one interval into one post and one edit", async () => {
    const channel = new FakeChannel();
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 1000 });
    for (let i = 0; i < 100; i++) {
      writer.write("x");
      await vi.advanceTimersByTimeAsync(5);
    }
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls.map((c) => c.op)).toEqual(["post", "edit"]);
    expect(channel.texts()).toEqual(["x".repeat(100)]);
  });

  it("delivers a 20,000-character answer with code blocks as several messages, each within the limit with balanced fences", async () => {
    const answer = longAnswer();
    const channel = new FakeChannel({ latencyMs: 50 });
    const writer = new StreamWriter(channel, { limit: 3900, intervalMs: 1000 });
    await stream(writer, answer, 1);
    const finishedAt = Date.now();
    expect(await settle(writer.finish())).toBeNull();

    const texts = channel.texts();
    expect(texts.length).toBeGreaterThanOrEqual(6);
    for (const text of texts) {
      expect(text.length).toBeLessThanOrEqual(3900);
      expect(openFenceAtEnd(text)).toBeNull();
    }
    expect(joinParts(texts)).toBe(answer);
    expect(writer.messageIds).toEqual([...channel.messages.keys()]);
    expect(channel.maxInFlight).toBe(1);
    // Intermediate writes keep the interval; the final text goes at once.
    const gaps = channel.calls
      .slice(1)
      .map((c, i) => ({ gap: c.at - channel.calls[i]!.at, during: c.at < finishedAt }))
      .filter((g) => g.during)
      .map((g) => g.gap);
    expect(gaps.length).toBeGreaterThan(3);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1000);
  });

  it("shows a long table as tables in every message it spans, streamed in small pieces, with its header repeated", async () => {
    const rows = Array.from({ length: 120 }, (_, i) => `| item ${i} | value number ${i} |`);
    const answer = `Figures:\n\n| item | value |\n| --- | --- |\n${rows.join("\n")}\n\nDone.`;
    const channel = new FakeChannel();
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, render: tablesToCodeBlocks });
    await stream(writer, answer, 7);
    expect(await settle(writer.finish())).toBeNull();
    const texts = channel.texts();
    expect(texts.length).toBeGreaterThan(1);
    for (const text of texts) {
      expect(text.length).toBeLessThanOrEqual(2000);
      expect(text.split("\n").filter((line) => line.startsWith("|"))).toEqual([]);
    }
    // Each row shows once, in the message that carries it.
    for (const row of ["item 0 ", "item 64 ", "item 119 "])
      expect(texts.filter((t) => t.includes(row))).toHaveLength(1);
    expect(texts.at(-1)?.endsWith("Done.")).toBe(true);
  });

  it("finalises a message before it posts the next one, and never changes it afterwards", async () => {
    const channel = new FakeChannel({ latencyMs: 20 });
    const writer = new StreamWriter(channel, { limit: 500, intervalMs: 100 });
    await stream(writer, longAnswer().slice(0, 5000), 2, 40);
    await settle(writer.finish());
    const ids = [...channel.messages.keys()];
    for (const post of channel.callsOf("post").slice(1)) {
      const previous = ids[ids.indexOf(post.id) - 1]!;
      expect(post.before.get(previous)).toBe(channel.messages.get(previous));
      const laterEdits = channel.calls.filter((c) => c.id === previous && c.at > post.at);
      expect(laterEdits).toEqual([]);
    }
  });

  it("keeps the latest text when every second edit is rate limited, and no stale edit overwrites a newer one", async () => {
    const answer = "A sentence that keeps on going. ".repeat(100);
    const channel = new FakeChannel({
      latencyMs: 30,
      failEdit: (n) => (n % 2 === 0 ? new RateLimitedError(1500) : null),
    });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 300 });
    await stream(writer, answer, 3, 20);
    expect(await settle(writer.finish())).toBeNull();

    expect(channel.texts().join("")).toBe(answer);
    for (const id of channel.messages.keys()) {
      const shown = channel.calls.filter((c) => c.id === id && c.ok && c.op !== "remove").map((c) => c.text);
      shown.slice(1).forEach((text, i) => {
        expect(text.startsWith(shown[i]!)).toBe(true);
      });
    }
    const limited = channel.calls.filter((c) => !c.ok);
    expect(limited.length).toBeGreaterThan(2);
    for (const call of limited) {
      const next = channel.calls[channel.calls.indexOf(call) + 1]!;
      expect(next.at - call.at).toBeGreaterThanOrEqual(1500);
    }
  });

  it("retries a post that the platform rate limited", async () => {
    const channel = new FakeChannel({ failPost: (n) => (n === 1 ? new RateLimitedError(500) : null) });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100 });
    writer.write("hello");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.callsOf("post").map((c) => c.ok)).toEqual([false, true]);
    expect(channel.texts()).toEqual(["hello"]);
    expect(writer.messageIds).toEqual([...channel.messages.keys()]);
  });

  it("does not retry a post that failed otherwise, and finish() rejects with its error", async () => {
    const channel = new FakeChannel({ failPost: () => new Error("socket hang up") });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100 });
    writer.write("hello");
    await vi.advanceTimersByTimeAsync(500);
    writer.write(" world");
    const error = await settle(writer.finish());
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe("socket hang up");
    expect(channel.callsOf("post")).toHaveLength(1);
    expect(await settle(writer.fail("Sorry."))).toBe(error);
    expect(channel.callsOf("post")).toHaveLength(1);
  });

  it("retries an edit that failed with a transient error", async () => {
    const channel = new FakeChannel({ failEdit: (n) => (n === 1 ? new Error("ECONNRESET") : null) });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100 });
    writer.write("first");
    await vi.advanceTimersByTimeAsync(50);
    writer.write(", second");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.callsOf("edit").map((c) => c.ok)).toEqual([false, true]);
    expect(channel.texts()).toEqual(["first, second"]);
  });

  it("posts a message deleted while it was written again, unkeyed, with all of its text", async () => {
    // Someone deletes message 1: its next edit fails as Discord's and Slack's do then.
    let deleted = false;
    const channel: FakeChannel = new FakeChannel({
      keyed: "deduped",
      failEdit: () => {
        if (!deleted) return null;
        deleted = false;
        channel.messages.delete("m1");
        return new MessageGoneError();
      },
    });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, keys: (i) => `key-${i}` });
    writer.write("first");
    await vi.advanceTimersByTimeAsync(50);
    deleted = true;
    writer.write(", second");
    await vi.advanceTimersByTimeAsync(300);
    writer.write(", third");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["first, second, third"]);
    const posts = channel.callsOf("post");
    expect(posts.map((c) => c.key)).toEqual(["key-0", undefined]);
    // One refused edit, not three: a deleted message is not retried.
    expect(channel.callsOf("edit").filter((c) => !c.ok)).toHaveLength(1);
  });

  it("never posts a message of whitespace alone, which the platforms refuse, and posts it once text follows", async () => {
    const channel = new FakeChannel({
      failPost: (_n, text) => (text.trim() === "" ? new Error("no_text") : null),
    });
    const writer = new StreamWriter(channel, { limit: 100, intervalMs: 100 });
    // 99 characters and two line breaks: the second message would hold only the last one.
    writer.write(`${"a".repeat(98)}.\n\n`);
    await vi.advanceTimersByTimeAsync(300);
    expect(channel.callsOf("post").filter((c) => !c.ok)).toEqual([]);
    writer.write("More.");
    expect(await settle(writer.finish())).toBeNull();
    expect(joinParts(channel.texts())).toBe(`${"a".repeat(98)}.\n\nMore.`);
    // An answer ending in a line break past the limit: the break is not sent alone.
    const ending = new FakeChannel({
      failPost: (_n, text) => (text.trim() === "" ? new Error("no_text") : null),
    });
    const last = new StreamWriter(ending, { limit: 100, intervalMs: 100 });
    last.write(`${"b".repeat(99)}.\n`);
    expect(await settle(last.finish())).toBeNull();
    expect(ending.texts()).toEqual([`${"b".repeat(99)}.`]);
  });

  it("shows the status line under the answer while streaming and removes it at the end", async () => {
    const channel = new FakeChannel();
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, statusLine: true });
    writer.status("_Calling everything__echo…_");
    await vi.advanceTimersByTimeAsync(200);
    writer.write("Hello");
    await vi.advanceTimersByTimeAsync(200);
    writer.status("_Calling everything__add…_");
    await vi.advanceTimersByTimeAsync(200);
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls.map((c) => c.text)).toEqual([
      "_Calling everything__echo…_",
      "Hello",
      "Hello\n\n_Calling everything__add…_",
      "Hello",
    ]);
    expect(channel.texts()).toEqual(["Hello"]);
  });

  it("removes a status-only placeholder when the answer has no text", async () => {
    const channel = new FakeChannel({ withRemove: true });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, statusLine: true });
    writer.status("_Thinking…_");
    await vi.advanceTimersByTimeAsync(200);
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls.map((c) => c.op)).toEqual(["post", "remove"]);
    expect(writer.messageIds).toEqual([]);
  });

  it("turns a status-only placeholder into a short note when messages cannot be removed", async () => {
    const channel = new FakeChannel();
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, statusLine: true });
    writer.status("_Thinking…_");
    await vi.advanceTimersByTimeAsync(200);
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["Done."]);
  });

  it("never edits a status-only message to whitespace: an answer of line breaks ends as an empty answer does", async () => {
    const refuseBlank = (_n: number, text: string) =>
      text.trim() === "" ? new Error("empty message") : null;
    const channel = new FakeChannel({ withRemove: true, failEdit: refuseBlank });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, statusLine: true });
    writer.status("-# Calling everything__echo…");
    await vi.advanceTimersByTimeAsync(200);
    writer.write("\n\n");
    await vi.advanceTimersByTimeAsync(200);
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls.map((c) => c.op)).toEqual(["post", "remove"]);
    expect(writer.messageIds).toEqual([]);

    const unremovable = new FakeChannel({ failEdit: refuseBlank });
    const other = new StreamWriter(unremovable, { limit: 2000, intervalMs: 100, statusLine: true });
    other.status("-# Calling everything__echo…");
    await vi.advanceTimersByTimeAsync(200);
    other.write("\n \n");
    expect(await settle(other.finish())).toBeNull();
    expect(unremovable.calls.filter((c) => !c.ok)).toEqual([]);
    expect(unremovable.texts()).toEqual(["Done."]);
  });

  it("writes the answer into its status-only message when the answer starts with a part of whitespace alone", async () => {
    const channel = new FakeChannel({
      failEdit: (_n, text) => (text.trim() === "" ? new Error("empty message") : null),
    });
    const writer = new StreamWriter(channel, { limit: 100, intervalMs: 100, statusLine: true });
    writer.status("-# Calling everything__echo…");
    await vi.advanceTimersByTimeAsync(200);
    writer.write(`\n\n${"a".repeat(150)}`);
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls.filter((c) => !c.ok)).toEqual([]);
    expect(channel.texts().join("")).toBe("a".repeat(150));
  });

  it("posts nothing when the answer ends before its status line was shown", async () => {
    const channel = new FakeChannel();
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, statusLine: true });
    writer.status("_Thinking…_");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls).toEqual([]);
  });

  it("ends the answer with the error sentence, closing an open code block first", async () => {
    const channel = new FakeChannel();
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100 });
    writer.write("Here you go:\n\n```ts\nconst x = 1;");
    await vi.advanceTimersByTimeAsync(200);
    expect(await settle(writer.fail("The model stopped early. Please try again."))).toBeNull();
    expect(channel.texts()).toEqual([
      "Here you go:\n\n```ts\nconst x = 1;\n```\n\nThe model stopped early. Please try again.",
    ]);
  });

  it("posts the error sentence alone when no text came before the failure", async () => {
    const channel = new FakeChannel();
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, statusLine: true });
    writer.status("_Thinking…_");
    await vi.advanceTimersByTimeAsync(200);
    expect(await settle(writer.fail("I could not reach the model."))).toBeNull();
    expect(channel.texts()).toEqual(["I could not reach the model."]);
  });

  it("fits every message within the limit after rendering", async () => {
    const answer = "Fish & chips, salt & vinegar. ".repeat(40);
    const channel = new FakeChannel();
    const render = (md: string) => md.replaceAll("&", "&amp;");
    const writer = new StreamWriter(channel, { limit: 100, intervalMs: 50, render });
    await stream(writer, answer, 4);
    expect(await settle(writer.finish())).toBeNull();
    const texts = channel.texts();
    expect(texts.every((t) => t.length <= 100)).toBe(true);
    expect(texts.map((t) => t.replaceAll("&amp;", "&")).join("")).toBe(answer);
  });

  it("ignores text written after the end", async () => {
    const channel = new FakeChannel();
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100 });
    writer.write("done");
    const finished = writer.finish();
    writer.write(" and more");
    expect(await settle(finished)).toBeNull();
    expect(channel.texts()).toEqual(["done"]);
  });
});

describe("StreamWriter with real timers", () => {
  it("streams with small intervals, one write at a time, to the complete text", async () => {
    vi.useRealTimers();
    const answer = "Real clocks tick too. ".repeat(30);
    const channel = new FakeChannel({ latencyMs: 2 });
    const writer = new StreamWriter(channel, { limit: 200, intervalMs: 15 });
    for (let at = 0; at < answer.length; at += 22) {
      writer.write(answer.slice(at, at + 22));
      await new Promise((r) => setTimeout(r, 3));
    }
    await writer.finish();
    expect(channel.texts().join("")).toBe(answer);
    expect(channel.texts().length).toBeGreaterThan(3);
    expect(channel.maxInFlight).toBe(1);
  });
});
