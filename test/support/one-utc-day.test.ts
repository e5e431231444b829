import { afterEach, describe, expect, it, vi } from "vitest";
import { inOneUtcDay } from "./one-utc-day.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("inOneUtcDay", () => {
  it("goes on at once with the day far from its end, and waits past 00:00 UTC near it", async () => {
    vi.useFakeTimers({ now: Date.UTC(2026, 11, 1, 12) });
    await inOneUtcDay(60_000);
    expect(Date.now()).toBe(Date.UTC(2026, 11, 1, 12));

    vi.setSystemTime(Date.UTC(2026, 11, 1, 23, 59, 30));
    vi.spyOn(console, "log").mockImplementation(() => {});
    let done = false;
    const waiting = inOneUtcDay(60_000).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(29_000);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(2_000);
    await waiting;
    expect(new Date().toISOString().slice(0, 10)).toBe("2026-12-02");
  });
});
