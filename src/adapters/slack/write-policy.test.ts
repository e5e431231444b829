import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { slackBuckets, slackDefaults, slackWritePolicy } from "./write-policy.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

/** `n` calls of `method` as the Slack adapter places them, and when each was let through. */
function calls(s: WriteScheduler, method: string, n: number, at: number[]): Promise<unknown>[] {
  const { lane } = slackDefaults(method);
  return Array.from({ length: n }, (_, i) =>
    s.run({
      lane,
      buckets: slackBuckets(method, { channel: `C${i}` }),
      run: async () => {
        at.push(Date.now());
      },
    }),
  );
}

describe("Slack's write policy", () => {
  it("takes :eyes: away at Tier 2 from the first call, its whole minute, never more", async () => {
    const s = new WriteScheduler(slackWritePolicy);
    const at: number[] = [];
    const start = Date.now();
    const removals = calls(s, "reactions.remove", 30, at);
    await vi.advanceTimersByTimeAsync(1_000);
    // Tier 2 is 20 a minute: no reserve is kept for answers, which never use this bucket.
    expect(at).toHaveLength(20);
    await vi.advanceTimersByTimeAsync(55_000);
    expect(at).toHaveLength(20);
    await vi.advanceTimersByTimeAsync(10_000);
    await Promise.all(removals);
    expect(at).toHaveLength(30);
    expect(Math.min(...at.slice(20)) - start).toBeGreaterThanOrEqual(60_000);
  });

  it("keeps part of a shared bucket back for answers: updates stop short of chat.update's minute", async () => {
    const s = new WriteScheduler(slackWritePolicy);
    const at: number[] = [];
    const { lane } = slackDefaults("agents.sessions.setStatus");
    expect(lane).toBe("update");
    void Promise.all(calls(s, "agents.sessions.setStatus", 50, at));
    await vi.advanceTimersByTimeAsync(1_000);
    // Tier 3, 50 a minute, 40 % of it kept for more urgent writes.
    expect(at).toHaveLength(30);
  });
});
