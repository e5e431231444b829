import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeChannel } from "./stream.fake.js";
import { StreamWriter } from "./stream.js";
import { postKeys } from "./write-keys.js";

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

const keys = postKeys("turn-1");

describe("postKeys", () => {
  it("derives the same key for the same turn, reply and message, and fits Discord's 25-character nonce", () => {
    expect(postKeys("turn-1")(0)).toBe(keys(0));
    const all = new Set([keys(0), keys(1), postKeys("turn-1", 1)(0), postKeys("turn-2")(0)]);
    expect(all.size).toBe(4);
    for (const key of all) expect(key).toMatch(/^sb[A-Za-z0-9_-]{23}$/);
  });
});

describe("StreamWriter with idempotency keys", () => {
  it("sends each message's key with its post, numbered by the message's place in the reply", async () => {
    const channel = new FakeChannel({ keyed: "find" });
    const writer = new StreamWriter(channel, { limit: 20, intervalMs: 100, keys });
    writer.write("first part here. second part there.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.callsOf("post").map((c) => c.key)).toEqual([keys(0), keys(1)]);
    // Nothing was in doubt: no lookups.
    expect(channel.lookups).toEqual([]);
  });

  it("finds a post that landed but failed, and edits it rather than posting twice", async () => {
    const channel = new FakeChannel({ keyed: "find", lostAnswer: (n) => n === 1 });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, keys });
    writer.write("The whole answer.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["The whole answer."]);
    expect(channel.callsOf("post")).toHaveLength(1);
    expect(channel.lookups).toEqual([keys(0)]);
    expect(writer.messageIds).toEqual(["m1"]);
  });

  it("posts again under the same key when the failed post never landed", async () => {
    const channel = new FakeChannel({
      keyed: "find",
      failPost: (n) => (n === 1 ? new Error("connect ECONNRESET") : null),
    });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, keys });
    writer.write("Answer.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["Answer."]);
    expect(channel.callsOf("post").map((c) => [c.key, c.ok])).toEqual([
      [keys(0), false],
      [keys(0), true],
    ]);
  });

  it("retries a failed post as it is where the platform dedupes keys itself", async () => {
    const channel = new FakeChannel({ keyed: "deduped", lostAnswer: (n) => n === 1 });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, keys });
    writer.write("Answer.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["Answer."]);
    expect(channel.callsOf("post").map((c) => c.key)).toEqual([keys(0), keys(0)]);
    expect(writer.messageIds).toEqual(["m1"]);
  });

  it("still never retries a failed post without a key, or on a platform that cannot tell", async () => {
    const unkeyed = new FakeChannel({ keyed: "find", lostAnswer: () => true });
    const writer = new StreamWriter(unkeyed, { limit: 2000, intervalMs: 100 });
    writer.write("Answer.");
    expect(String(await settle(writer.finish()))).toContain("socket hang up");
    const blind = new FakeChannel({ lostAnswer: () => true });
    const other = new StreamWriter(blind, { limit: 2000, intervalMs: 100, keys });
    other.write("Answer.");
    expect(String(await settle(other.finish()))).toContain("socket hang up");
    expect(unkeyed.callsOf("post")).toHaveLength(1);
    expect(blind.callsOf("post")).toHaveLength(1);
  });

  it("rides out an outage for a minute, backing off, then gives up and says why", async () => {
    const channel = new FakeChannel({ keyed: "find", failPost: () => new Error("Service Unavailable") });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 100, keys });
    const start = Date.now();
    writer.write("Answer.");
    expect(String(await settle(writer.finish()))).toContain("Service Unavailable");
    const posts = channel.callsOf("post");
    expect(posts.map((c) => c.at - start)).toEqual([0, 1, 3, 7, 15, 25, 35, 45, 55].map((s) => s * 1000));
    // Each retry asked first whether the one before had landed after all.
    expect(channel.lookups).toHaveLength(posts.length - 1);
    expect(channel.messages.size).toBe(0);
  });
});

describe("StreamWriter retaking a reply with keys", () => {
  /** The dead process posted `texts` with this turn's keys; the record named only `recorded` of them. */
  function orphaned(texts: string[], recorded: number) {
    const channel = new FakeChannel({ keyed: "find", withRemove: true, prefix: "new" });
    texts.forEach((text, i) => {
      channel.seed(`old${i}`, text);
      channel.keys.set(keys(i), `old${i}`);
    });
    const messages = texts.slice(0, recorded).map((_, i) => `old${i}`);
    const writer = new StreamWriter(channel, {
      limit: 40,
      intervalMs: 100,
      keys,
      resume: { messages, shown: async (id) => channel.messages.get(id) ?? null, retake: "" },
    });
    return { channel, writer };
  }

  it("finds the first message the dead process posted before it recorded it, and writes in it", async () => {
    const { channel, writer } = orphaned(["Half an ans"], 0);
    writer.write("The whole answer, again.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["The whole answer, again."]);
    expect(channel.callsOf("post")).toEqual([]);
    expect(writer.messageIds).toEqual(["old0"]);
  });

  it("finds a continuation message the record never named, and removes it when the new answer is shorter", async () => {
    const { channel, writer } = orphaned(["The first part of it that", "was cut off"], 1);
    writer.write("Short now.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.texts()).toEqual(["Short now."]);
    expect(channel.callsOf("remove").map((c) => c.id)).toEqual(["old1"]);
    expect(channel.callsOf("post")).toEqual([]);
  });

  it("posts a message the dead process never reached, after looking it up once", async () => {
    const { channel, writer } = orphaned(["The first part."], 1);
    writer.write("The first part of the answer. And its second part, longer.");
    expect(await settle(writer.finish())).toBeNull();
    expect(channel.callsOf("post").map((c) => c.key)).toEqual([keys(1)]);
    // Once before posting it, and once past the end for messages left over.
    expect(channel.lookups).toEqual([keys(1), keys(2)]);
    expect(channel.texts().join(" ")).toContain("And its second part");
  });
});
