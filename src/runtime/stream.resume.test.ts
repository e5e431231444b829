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

/** Texts a dead process left in the reply, which a retake must not show again. */
const PARTIAL = "partial text the dead process showed";

/**
 * A writer that takes over the reply in messages `ids` of `channel` after its process
 * died, from the checkpoint text `retake`. The channel's own posts are named p1, p2…
 */
function retaken(
  channel: FakeChannel,
  ids: string[],
  retake: string,
  more: {
    limit?: number;
    statusLine?: boolean;
    shown?: (id: string) => Promise<string | null>;
    onMessages?: (ids: string[]) => Promise<void>;
  } = {},
): StreamWriter {
  return new StreamWriter(channel, {
    limit: more.limit ?? 2000,
    intervalMs: 100,
    ...(more.statusLine ? { statusLine: true } : {}),
    ...(more.onMessages ? { onMessages: more.onMessages } : {}),
    resume: {
      messages: ids,
      shown: more.shown ?? (async (id) => channel.messages.get(id) ?? null),
      retake,
    },
  });
}

describe("StreamWriter retaking a reply whose process died", () => {
  it("rewrites the last message as the kept text plus the new text, dropping what the dead process showed", async () => {
    const channel = new FakeChannel({ prefix: "p" });
    channel.seed("m1", PARTIAL);
    const writer = new StreamWriter(channel, {
      limit: 2000,
      intervalMs: 100,
      resume: { messages: ["m1"], shown: async () => PARTIAL, retake: "Kept text." },
    });
    writer.write(" More");
    await vi.advanceTimersByTimeAsync(150);
    writer.write(" text.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["Kept text. More text."]);
    expect(channel.callsOf("post")).toEqual([]);
    expect(channel.calls.every((c) => c.op === "edit" && c.id === "m1")).toBe(true);
    expect(channel.calls.some((c) => c.text.includes(PARTIAL))).toBe(false);
    expect(channel.calls.at(-1)?.text).toBe("Kept text. More text.");
    expect(writer.messageIds).toEqual(["m1"]);
  });

  it("with an empty retake, removes nothing before there is text, then shows exactly the new text", async () => {
    const channel = new FakeChannel({ prefix: "p", withRemove: true });
    channel.seed("m1", PARTIAL);
    const writer = retaken(channel, ["m1"], "", { statusLine: true });
    // A status before any text: the message shows it, and is not removed for having no text.
    writer.status("_Thinking…_");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(channel.calls.map((c) => [c.op, c.id, c.text])).toEqual([["edit", "m1", "_Thinking…_"]]);
    writer.write("New text.");
    await vi.advanceTimersByTimeAsync(150);
    expect(channel.calls.map((c) => [c.op, c.id, c.text])).toEqual([
      ["edit", "m1", "_Thinking…_"],
      ["edit", "m1", "New text."],
    ]);
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["New text."]);
    expect(channel.callsOf("post")).toEqual([]);
    expect(channel.callsOf("remove")).toEqual([]);
  });

  it("with an empty retake, removes a message the new text does not need only once the answer ends", async () => {
    const channel = new FakeChannel({ prefix: "p", withRemove: true });
    channel.seed("m1", "Old first part.");
    channel.seed("m2", PARTIAL);
    const writer = retaken(channel, ["m1", "m2"], "");
    writer.write("New text.");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(channel.calls.map((c) => [c.op, c.id, c.text])).toEqual([["edit", "m1", "New text."]]);
    expect(channel.messages.get("m2")).toBe(PARTIAL);
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls.map((c) => [c.op, c.id])).toEqual([
      ["edit", "m1"],
      ["remove", "m2"],
    ]);
    expect(channel.texts()).toEqual(["New text."]);
  });

  it("posts the text anew when the last message is gone, and reports no gone id", async () => {
    const channel = new FakeChannel({ prefix: "p" });
    const reports: string[][] = [];
    const writer = retaken(channel, ["m1"], "Kept text.", {
      shown: async () => null,
      onMessages: async (ids) => {
        reports.push(ids);
      },
    });
    writer.write(" More text.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls.map((c) => [c.op, c.id, c.text])).toEqual([["post", "p1", "Kept text. More text."]]);
    expect(channel.texts()).toEqual(["Kept text. More text."]);
    // Told at once that m1 is gone, then of the message that replaces it.
    expect(reports).toEqual([[], ["p1"]]);
    expect(reports.flat()).not.toContain("m1");
    expect(writer.messageIds).toEqual(["p1"]);
  });

  it("posts the second part anew when the last of two messages is gone", async () => {
    const channel = new FakeChannel({ prefix: "p" });
    channel.seed("m1", "Old first part.");
    const reports: string[][] = [];
    const first = "A first paragraph, thirty six chars.\n\n";
    const second = "A second paragraph follows it.";
    const writer = retaken(channel, ["m1", "m2"], first, {
      limit: 45,
      onMessages: async (ids) => {
        reports.push(ids);
      },
    });
    writer.write(second);
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls.map((c) => [c.op, c.id, c.text])).toEqual([
      ["edit", "m1", first],
      ["post", "p1", second],
    ]);
    expect(reports).toEqual([["m1"], ["m1", "p1"]]);
    expect(writer.messageIds).toEqual(["m1", "p1"]);
  });

  it("tells the record a gone message is gone even when the text then fits in the messages left", async () => {
    const channel = new FakeChannel({ prefix: "p" });
    channel.seed("m1", "Old first part.");
    const reports: string[][] = [];
    const writer = retaken(channel, ["m1", "m2"], "Kept.", {
      onMessages: async (ids) => {
        reports.push(ids);
      },
    });
    writer.write(" new");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls.map((c) => [c.op, c.id, c.text])).toEqual([["edit", "m1", "Kept. new"]]);
    expect(reports).toEqual([["m1"]]);
  });

  it("removes what the dead process showed when the retaken answer ends with no text", async () => {
    const channel = new FakeChannel({ prefix: "p", withRemove: true });
    channel.seed("m1", PARTIAL);
    const reports: string[][] = [];
    const writer = retaken(channel, ["m1"], "", {
      onMessages: async (ids) => {
        reports.push(ids);
      },
    });
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls.map((c) => [c.op, c.id])).toEqual([["remove", "m1"]]);
    expect(reports).toEqual([[]]);
  });

  it("replaces what the dead process showed with Done. when messages cannot be removed", async () => {
    const channel = new FakeChannel({ prefix: "p" });
    channel.seed("m1", PARTIAL);
    const writer = retaken(channel, ["m1"], "");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["Done."]);
  });

  it("edits the first of two messages to the whole text and removes the second when the text fits in one", async () => {
    const channel = new FakeChannel({ prefix: "p", withRemove: true });
    channel.seed("m1", "Old first part, long enough to fill.");
    channel.seed("m2", PARTIAL);
    const reports: string[][] = [];
    const writer = retaken(channel, ["m1", "m2"], "Kept.", {
      limit: 40,
      onMessages: async (ids) => {
        reports.push(ids);
      },
    });
    writer.write(" New text.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.calls.map((c) => [c.op, c.id, c.text])).toEqual([
      ["edit", "m1", "Kept. New text."],
      ["remove", "m2", ""],
    ]);
    expect(channel.texts()).toEqual(["Kept. New text."]);
    expect(reports).toEqual([["m1"]]);
    expect(writer.messageIds).toEqual(["m1"]);
  });

  it("edits both of two messages, posting nothing, when the new text needs two", async () => {
    const channel = new FakeChannel({ prefix: "p", withRemove: true });
    channel.seed("m1", "Old first part.");
    channel.seed("m2", PARTIAL);
    const first = "A first paragraph, thirty six chars.\n\n";
    const second = "A second paragraph follows it.";
    const writer = retaken(channel, ["m1", "m2"], first, { limit: 45 });
    writer.write(second);
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.callsOf("post")).toEqual([]);
    expect(channel.callsOf("remove")).toEqual([]);
    expect(channel.texts()).toEqual([first, second]);
    expect(channel.calls.at(-1)).toMatchObject({ op: "edit", id: "m2", text: second, final: true });
    expect(writer.messageIds).toEqual(["m1", "m2"]);
  });

  it("still reads back the last message, once and before any write, and no other", async () => {
    const channel = new FakeChannel({ prefix: "p", withRemove: true });
    channel.seed("m1", "Old first part.");
    channel.seed("m2", PARTIAL);
    // The Slack adapter stops a native stream left open in the message when it is read back.
    const writesBeforeRead: number[] = [];
    const shown = vi.fn(async (id: string) => {
      writesBeforeRead.push(channel.calls.length);
      return channel.messages.get(id) ?? null;
    });
    const writer = retaken(channel, ["m1", "m2"], "Kept.", { shown });
    writer.write(" New text.");
    await vi.advanceTimersByTimeAsync(150);
    writer.write(" More.");
    expect(await settle(writer.finish())).toBeNull();
    expect(shown.mock.calls).toEqual([["m2"]]);
    expect(writesBeforeRead).toEqual([0]);
    expect(channel.texts()).toEqual(["Kept. New text. More."]);
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
