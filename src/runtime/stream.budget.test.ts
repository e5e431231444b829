import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type Call, FakeChannel } from "./stream.fake.js";
import { RateBudget, RateLimitedError, StreamWriter } from "./stream.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

/** The most calls that fall in any window [t, t + ms), t being a call's time. */
function busiestWindow(calls: Call[], ms: number): number {
  const times = calls.map((c) => c.at).sort((a, b) => a - b);
  return Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + ms).length));
}

describe("RateBudget", () => {
  it("hands out its capacity at once, then one token per refill period, in order", async () => {
    const budget = new RateBudget({ capacity: 2, refillPerSec: 2 });
    const start = Date.now();
    const granted: [number, number][] = [];
    const takes = [0, 1, 2, 3, 4].map((k) => budget.take().then(() => granted.push([k, Date.now() - start])));
    await vi.runAllTimersAsync();
    await Promise.all(takes);
    expect(granted).toEqual([
      [0, 0],
      [1, 0],
      [2, 500],
      [3, 1000],
      [4, 1500],
    ]);
  });

  it("makes everyone wait out a pause", async () => {
    const budget = new RateBudget({ capacity: 5, refillPerSec: 5 });
    const start = Date.now();
    budget.pause(3000);
    const times: number[] = [];
    const takes = [budget.take(), budget.take()].map((p) => p.then(() => times.push(Date.now() - start)));
    await vi.runAllTimersAsync();
    await Promise.all(takes);
    expect(Math.min(...times)).toBeGreaterThanOrEqual(3000);
  });

  it("rejects a budget that could never grant a token", () => {
    expect(() => new RateBudget({ capacity: 0, refillPerSec: 1 })).toThrow(RangeError);
    expect(() => new RateBudget({ capacity: 1, refillPerSec: 0 })).toThrow(RangeError);
  });
});

describe("StreamWriter sharing a RateBudget", () => {
  it("never exceeds the budget's rate with 20 writers streaming at once, and completes every answer", async () => {
    const budget = new RateBudget({ capacity: 5, refillPerSec: 1 });
    const channels = Array.from(
      { length: 20 },
      (_, k) => new FakeChannel({ prefix: `w${k}-`, latencyMs: 40 }),
    );
    const writers = channels.map((c) => new StreamWriter(c, { limit: 300, intervalMs: 200, budget }));
    const answers = writers.map((_, k) => `Answer ${k}: ${"streamed words ".repeat(40)}`);
    for (let at = 0; at < answers[0]!.length + 20; at += 20) {
      writers.forEach((w, k) => {
        w.write(answers[k]!.slice(at, at + 20));
      });
      await vi.advanceTimersByTimeAsync(100);
    }
    const done = Promise.all(writers.map((w) => w.finish()));
    await vi.runAllTimersAsync();
    await done;

    channels.forEach((c, k) => {
      expect(c.texts().join("")).toBe(answers[k]);
    });
    const calls = channels.flatMap((c) => c.calls);
    for (const ms of [1000, 5000, 20_000]) {
      expect(busiestWindow(calls, ms)).toBeLessThanOrEqual(5 + ms / 1000);
    }
  });

  it("pauses every writer sharing the budget when one of them is rate limited", async () => {
    const budget = new RateBudget({ capacity: 10, refillPerSec: 10 });
    let limitedAt = -1;
    const a = new FakeChannel({
      prefix: "a",
      failEdit: (n) => {
        if (n !== 2) return null;
        limitedAt = Date.now();
        return new RateLimitedError(5000);
      },
    });
    const b = new FakeChannel({ prefix: "b" });
    const writers = [a, b].map((c) => new StreamWriter(c, { limit: 2000, intervalMs: 100, budget }));
    for (let i = 0; i < 40; i++) {
      for (const w of writers) w.write(`${i} `);
      await vi.advanceTimersByTimeAsync(150);
    }
    const done = Promise.all(writers.map((w) => w.finish()));
    await vi.runAllTimersAsync();
    await done;

    expect(limitedAt).toBeGreaterThan(0);
    const during = [...a.calls, ...b.calls].filter((c) => c.at > limitedAt && c.at < limitedAt + 5000);
    expect(during).toEqual([]);
    expect(b.calls.some((c) => c.at >= limitedAt + 5000)).toBe(true);
  });
});

describe("a window budget (Discord's writes per channel)", () => {
  it("lets `capacity` writes go at once and never more than that in any window", async () => {
    vi.useFakeTimers();
    try {
      const budget = new RateBudget({ capacity: 5, windowMs: 5_000 });
      const times: number[] = [];
      const start = Date.now();
      const all = Array.from({ length: 12 }, () => budget.take().then(() => times.push(Date.now() - start)));
      await vi.advanceTimersByTimeAsync(20_000);
      await Promise.all(all);
      expect(times.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
      for (let i = 5; i < times.length; i++) expect(times[i]! - times[i - 5]!).toBeGreaterThanOrEqual(5_000);
      expect(times[5]).toBe(5_000);
    } finally {
      vi.useRealTimers();
    }
  });

  it("writes at once again when the last burst is a window old", async () => {
    vi.useFakeTimers();
    try {
      const budget = new RateBudget({ capacity: 5, windowMs: 5_000 });
      for (let i = 0; i < 4; i++) await budget.take();
      await vi.advanceTimersByTimeAsync(4_000);
      let went = false;
      void budget.take().then(() => {
        went = true;
      });
      await vi.advanceTimersByTimeAsync(0);
      expect(went).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
