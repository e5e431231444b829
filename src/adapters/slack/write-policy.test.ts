import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RateLimitedError } from "../../runtime/message-ops.js";
import { LocalBudgets } from "../../runtime/scheduler/budgets.js";
import { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { isSlackWrite, slackBuckets, slackDefaults, slackWritePolicy } from "./write-policy.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

/** `n` calls of `method` as the Slack adapter places them, and when each was let through. */
function calls(s: WriteScheduler, method: string, n: number, at: number[]): Promise<unknown>[] {
  const { lane, ...options } = slackDefaults(method);
  return Array.from({ length: n }, (_, i) =>
    s.run({
      lane,
      ...options,
      buckets: slackBuckets(method, { channel: `C${i}` }),
      run: async () => {
        at.push(Date.now());
      },
    }),
  );
}

describe("Slack's write policy", () => {
  it("knows each bucket's limit: per channel, for the workspace, known from the start or once a 429 showed it", () => {
    const limit = (method: string, params: Record<string, unknown> | undefined, learned: boolean) =>
      slackBuckets(method, params).map((b) => slackWritePolicy.limitOf(b, learned));
    const minute = (capacity: number, alone?: true) => ({
      capacity,
      windowMs: 61_000,
      ...(alone && { alone }),
    });
    expect(limit("chat.postMessage", { channel: "C1" }, false)).toEqual([{ capacity: 3, windowMs: 3_150 }]);
    expect(limit("chat.update", { channel: "C1" }, false)).toEqual([undefined, undefined]);
    expect(limit("chat.update", { channel: "C1" }, true)).toEqual([
      { capacity: 1, windowMs: 1_050 },
      minute(50),
    ]);
    expect(limit("chat.appendStream", { channel: "C1" }, true)).toEqual([
      { capacity: 2, windowMs: 1_050 },
      minute(100),
    ]);
    expect(limit("chat.startStream", {}, false)).toEqual([minute(20), minute(20)]);
    expect(limit("reactions.add", { channel: "C1" }, false)).toEqual([minute(50), minute(20, true)]);
    expect(limit("reactions.remove", { channel: "C1" }, true)).toEqual([undefined]);
    expect(limit("agents.sessions.setStatus", { status: "processing" }, false)).toEqual([
      { capacity: 25, windowMs: 61_000, alone: true },
      minute(50, true),
    ]);
    // Slack Connect stubs, a message's and its thread's: Tier 4 from the first lookup.
    expect(limit("files.info", { file: "F1" }, false)).toEqual([minute(100)]);
    // Approvers' groups (Tier 2) and a notice's direct message (Tier 3): known from the first call.
    expect(limit("usergroups.users.list", { usergroup: "S1" }, false)).toEqual([minute(20)]);
    expect(limit("conversations.open", { users: "U1" }, false)).toEqual([minute(50)]);
    expect(limit("views.open", {}, false)).toEqual([undefined]);
    expect(limit("views.open", {}, true)).toEqual([minute(100)]);
    expect(limit("chat.meMessage", { channel: "C1" }, true)).toEqual([undefined]);
  });

  it("paces a user group's members as a read, and opening a direct message, called by the writes client, as a write", () => {
    expect(["usergroups.users.list", "users.info", "conversations.replies"].map(isSlackWrite)).toEqual([
      false,
      false,
      false,
    ]);
    expect(["conversations.open", "chat.postMessage"].map(isSlackWrite)).toEqual([true, true]);
  });

  it("takes chat.update's 429s in two channels for the workspace's tier: a third channel waits too", async () => {
    const s = new WriteScheduler(slackWritePolicy);
    // Slack's 429 does not say whether the channel's limit or the workspace's tier was met.
    const limitedOnce = (channel: string) => {
      let limited = false;
      return s.run({
        lane: "final",
        buckets: slackBuckets("chat.update", { channel }),
        run: async () => {
          if (limited) return;
          limited = true;
          throw new RateLimitedError(3_000);
        },
      });
    };
    const writes = [limitedOnce("C1"), limitedOnce("C2")];
    await vi.advanceTimersByTimeAsync(10);
    expect(s.waitFor(slackBuckets("chat.update", { channel: "C3" }), "final")).toBe(2_990);
    await vi.advanceTimersByTimeAsync(3_000);
    await Promise.all(writes);
  });

  it("shows :eyes: only while Tier 2 can take it away again, and then takes it away at once", async () => {
    const s = new WriteScheduler(slackWritePolicy);
    const added: number[] = [];
    const start = Date.now();
    const adds = calls(s, "reactions.add", 30, added).map((p) =>
      p.then(
        () => "added",
        () => "dropped",
      ),
    );
    await vi.advanceTimersByTimeAsync(2_000);
    // reactions.add is Tier 3 (50 a minute), its removal Tier 2 (20): each :eyes: spends a
    // removal's place, all 20 of them (nothing else does), and the rest are dropped when late.
    expect(await Promise.all(adds)).toEqual([...Array(20).fill("added"), ...Array(10).fill("dropped")]);
    const removed: number[] = [];
    await Promise.all(calls(s, "reactions.remove", 20, removed));
    expect(removed).toHaveLength(20);
    expect(Math.max(...removed) - start).toBeLessThan(2_100);
    // The minute's places are spent: no :eyes: until the first of them leaves the window.
    const late = calls(s, "reactions.add", 1, added).map((p) =>
      p.then(
        () => "added",
        () => "dropped",
      ),
    );
    await vi.advanceTimersByTimeAsync(1_500);
    expect(await Promise.all(late)).toEqual(["dropped"]);
  });

  it("starts an agent session only while half of Tier 3 has room, and ends every session it started at once", async () => {
    const s = new WriteScheduler(slackWritePolicy);
    const { lane, ...options } = slackDefaults("agents.sessions.setStatus");
    expect(lane).toBe("update");
    const status = (channel: string, value: string, at: number[]) =>
      s
        .run({
          lane,
          // agent-sessions.ts drops a start that could not go out within 3 s.
          ...options,
          ...(value === "processing" ? { dropAfterMs: 3_000 } : {}),
          buckets: slackBuckets("agents.sessions.setStatus", { channel_id: channel, status: value }),
          run: async () => void at.push(Date.now()),
        })
        .then(
          () => "sent",
          () => "dropped",
        );
    const started: number[] = [];
    const starts = Array.from({ length: 40 }, (_, i) => status(`C${i}`, "processing", started));
    await vi.advanceTimersByTimeAsync(4_000);
    // Tier 3 is 50 a minute for starts and ends together: 25 starts, each leaving its end a place.
    expect((await Promise.all(starts)).filter((r) => r === "sent")).toHaveLength(25);
    const ended: number[] = [];
    const start = Date.now();
    const ends = Array.from({ length: 25 }, (_, i) => status(`C${i}`, i % 5 ? "active" : "suspended", ended));
    await vi.advanceTimersByTimeAsync(10);
    expect(await Promise.all(ends)).toEqual(Array(25).fill("sent"));
    expect(Math.max(...ended) - start).toBeLessThan(10);
  });

  it("holds sessions' ends to Tier 3's minute when more than half of it went to starts (replicas' crossed claims)", async () => {
    const book = new LocalBudgets(slackWritePolicy);
    const s = new WriteScheduler(book);
    const status = (channel: string, value: string, at: number[]) =>
      s.run({
        lane: "update",
        buckets: slackBuckets("agents.sessions.setStatus", { channel_id: channel, status: value }),
        run: async () => void at.push(Date.now()),
      });
    const started: number[] = [];
    await Promise.all(Array.from({ length: 25 }, (_, i) => status(`C${i}`, "processing", started)));
    // Three starts more, granted by another replica from a claim this one had not yet counted.
    for (let i = 0; i < 3; i++)
      book.spend(
        slackBuckets("agents.sessions.setStatus", { channel_id: `R${i}`, status: "processing" }),
        Date.now(),
      );
    const ended: number[] = [];
    const start = Date.now();
    const ends = Array.from({ length: 28 }, (_, i) =>
      status(i < 25 ? `C${i}` : `R${i - 25}`, "active", ended),
    );
    await vi.advanceTimersByTimeAsync(10);
    // 28 starts and 22 ends fill the minute's 50; the last three ends wait for the first starts to leave it.
    expect(ended).toHaveLength(22);
    await vi.advanceTimersByTimeAsync(61_000);
    await Promise.all(ends);
    expect(ended).toHaveLength(28);
    const all = [...started, ...Array(3).fill(start), ...ended].sort((a, b) => a - b);
    for (const at of all)
      expect(all.filter((t) => t >= at && t < at + 60_000).length).toBeLessThanOrEqual(50);
  });
});
