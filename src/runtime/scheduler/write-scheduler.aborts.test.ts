import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { RateLimitedError } from "../message-ops.js";
import { WriteDropped, WriteScheduler } from "./write-scheduler.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

it("drops a write whose signal aborted while it ran and then met a 429, instead of running it again", async () => {
  const s = new WriteScheduler({ limitOf: () => undefined });
  const abort = new AbortController();
  let runs = 0;
  const result = s
    .run({
      lane: "final",
      buckets: ["b"],
      signal: abort.signal,
      run: async () => {
        runs += 1;
        abort.abort();
        throw new RateLimitedError(100);
      },
    })
    .catch((err: unknown) => err);
  await vi.advanceTimersByTimeAsync(1_000);
  const dropped = await result;
  expect(dropped).toBeInstanceOf(WriteDropped);
  expect((dropped as Error).message).toBe("write not written: cancelled");
  expect(runs).toBe(1);
  expect(s.backlog().final).toBe(0);
});

it("still runs a write again after a 429 when its signal did not abort", async () => {
  const s = new WriteScheduler({ limitOf: () => undefined });
  let runs = 0;
  const result = s.run({
    lane: "final",
    buckets: ["b"],
    signal: new AbortController().signal,
    run: async () => {
      runs += 1;
      if (runs === 1) throw new RateLimitedError(100);
      return "written";
    },
  });
  await vi.advanceTimersByTimeAsync(1_000);
  expect(await result).toBe("written");
  expect(runs).toBe(2);
});
