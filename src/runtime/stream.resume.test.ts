import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeChannel } from "./stream.fake.js";
import { endingFor, RateLimitedError, StreamWriter } from "./stream.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

async function settle(done: Promise<void>): Promise<unknown> {
  const outcome = done.then(
    () => null,
    (error: unknown) => error,
  );
  await vi.runAllTimersAsync();
  return outcome;
}

const NOTE = "Interrupted by a restart; ask again.";

/** A writer that goes on in messages `ids` of `channel`, reading them back from it. */
function resumed(channel: FakeChannel, ids: string[], limit = 2000): StreamWriter {
  return new StreamWriter(channel, {
    limit,
    intervalMs: 100,
    resume: { messages: ids, shown: async (id) => channel.messages.get(id) ?? null },
  });
}

describe("StreamWriter resuming a reply written earlier", () => {
  it("goes on in the last message, after the text it shows, and posts nothing", async () => {
    const channel = new FakeChannel();
    channel.seed("a1", "First part.");
    channel.seed("a2", "Second part, cut");
    const writer = resumed(channel, ["a1", "a2"]);
    writer.write(" off here and finished.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["First part.", "Second part, cut off here and finished."]);
    expect(channel.calls.map((c) => [c.op, c.id])).toEqual([["edit", "a2"]]);
    expect(writer.messageIds).toEqual(["a1", "a2"]);
  });

  it("ends the message with a note after a blank line, closing the code block it left open", async () => {
    const channel = new FakeChannel();
    channel.seed("a1", "Here you go:\n\n```ts\nconst x = 1;");
    const writer = resumed(channel, ["a1"]);
    expect(await settle(writer.fail(NOTE))).toBeNull();
    expect(channel.texts()).toEqual([`Here you go:\n\n\`\`\`ts\nconst x = 1;\n\`\`\`\n\n${NOTE}`]);
    expect(channel.callsOf("post")).toEqual([]);
  });

  it("continues in a new message when the last one has no room left for the note", async () => {
    const channel = new FakeChannel();
    const full = `${"word ".repeat(38)}end.`;
    channel.seed("a1", full);
    const writer = resumed(channel, ["a1"], 200);
    expect(await settle(writer.fail(NOTE))).toBeNull();
    // The split keeps the blank line with the first part, as in any split reply.
    expect(channel.texts()).toEqual([`${full}\n\n`, NOTE]);
    expect(writer.messageIds).toEqual(["a1", "m1"]);
  });

  it("posts anew when the message is gone", async () => {
    const channel = new FakeChannel();
    const writer = resumed(channel, ["deleted"]);
    expect(await settle(writer.fail(NOTE))).toBeNull();
    expect(channel.texts()).toEqual([NOTE]);
    expect(writer.messageIds).toEqual(["m1"]);
  });

  it("fails when the message cannot be read back, writing nothing", async () => {
    const channel = new FakeChannel();
    const writer = new StreamWriter(channel, {
      limit: 2000,
      intervalMs: 100,
      resume: {
        messages: ["a1"],
        shown: async () => {
          throw new Error("channel_not_found");
        },
      },
    });
    const error = await settle(writer.fail(NOTE));
    expect((error as Error).message).toBe("channel_not_found");
    expect(channel.calls).toEqual([]);
  });
});

describe("StreamWriter telling where the reply is", () => {
  it("reports the messages after each post, and writes on only once the report is done", async () => {
    const channel = new FakeChannel({ latencyMs: 10 });
    const log: string[] = [];
    const writer = new StreamWriter(channel, {
      limit: 100,
      intervalMs: 50,
      onMessages: async (ids) => {
        log.push(`record ${ids.join(",")}`);
        await new Promise((r) => setTimeout(r, 500));
        log.push("recorded");
      },
    });
    writer.write("A paragraph of some forty characters.\n\n".repeat(6));
    expect(await settle(writer.finish())).toBeNull();
    const posts = channel.callsOf("post");
    expect(posts.length).toBeGreaterThanOrEqual(3);
    expect(log.filter((l) => l.startsWith("record "))).toEqual(
      posts.map(
        (_, i) =>
          `record ${posts
            .slice(0, i + 1)
            .map((p) => p.id)
            .join(",")}`,
      ),
    );
    // Every write after a post starts at least the recorder's 500 ms later.
    for (const post of posts) {
      const next = channel.calls[channel.calls.indexOf(post) + 1];
      if (next) expect(next.at - post.at).toBeGreaterThanOrEqual(500);
    }
  });

  it("reports a removed placeholder, so the record names no deleted message", async () => {
    const channel = new FakeChannel({ withRemove: true });
    const reports: string[][] = [];
    const writer = new StreamWriter(channel, {
      limit: 2000,
      intervalMs: 100,
      statusLine: true,
      onMessages: async (ids) => {
        reports.push(ids);
      },
    });
    writer.status("_Thinking…_");
    await vi.advanceTimersByTimeAsync(200);
    expect(await settle(writer.finish())).toBeNull();
    expect(reports).toEqual([["m1"], []]);
  });

  it("still delivers the answer when recording fails", async () => {
    const channel = new FakeChannel();
    const writer = new StreamWriter(channel, {
      limit: 2000,
      intervalMs: 100,
      onMessages: async () => {
        throw new Error("store down");
      },
    });
    writer.write("The answer.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["The answer."]);
  });

  it("marks only the last message's last write as final, also when it is retried after a 429", async () => {
    let limited = false;
    const channel = new FakeChannel({
      failEdit: (_, text) => {
        if (limited || !text.endsWith("Done.")) return null;
        limited = true;
        return new RateLimitedError(300);
      },
    });
    const writer = new StreamWriter(channel, { limit: 60, intervalMs: 100 });
    writer.write("First line of the answer, long enough.\n\n");
    await vi.advanceTimersByTimeAsync(150);
    writer.write("Second line, which goes to a message of its own.");
    await vi.advanceTimersByTimeAsync(150);
    writer.write(" Done.");
    expect(await settle(writer.finish())).toBeNull();
    const last = [...channel.messages.keys()].at(-1);
    const finals = channel.calls.filter((c) => c.final);
    // The 429'd final edit and its retry, nothing else.
    expect(finals.map((c) => [c.id, c.text, c.ok])).toEqual([
      [last, channel.texts().at(-1), false],
      [last, channel.texts().at(-1), true],
    ]);
    expect(channel.calls.at(-1)).toBe(finals.at(-1));
  });
});

describe("endingFor", () => {
  it("puts a blank line before the message, closes an open fence, and adds nothing to an empty text", () => {
    expect(endingFor("", NOTE)).toBe(NOTE);
    expect(endingFor("Text", NOTE)).toBe(`\n\n${NOTE}`);
    expect(endingFor("Text\n", NOTE)).toBe(`\n${NOTE}`);
    expect(endingFor("Text\n\n", NOTE)).toBe(NOTE);
    expect(endingFor("```\ncode", NOTE)).toBe(`\n\`\`\`\n\n${NOTE}`);
  });
});
