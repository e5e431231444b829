import { afterEach, describe, expect, it, vi } from "vitest";
import { blockFor, TurnCounter } from "../../test/support/event-loop.js";
import { nextSlice, SLICE_MS } from "./loop-slices.js";

/** A burst of `n` messages at once, each busy for `ms` (its intake) once its turn comes. */
async function burst(n: number, ms: number, onTurn: (i: number) => void): Promise<void> {
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      await nextSlice();
      onTurn(i);
      blockFor(ms);
    }),
  );
}

/**
 * Resolves in the timers phase of the event loop: immediates queued from there run in the
 * same turn, before the next timers. A test run from an immediate would see its own turn end first.
 */
function timersPhase(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

describe("nextSlice", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("lets a message alone go in the same turn of the event loop", async () => {
    await timersPhase();
    const order: string[] = [];
    setTimeout(() => order.push("next turn"), 0);
    await nextSlice();
    order.push("message");
    expect(order).toEqual(["message"]);
  });

  it("takes a burst a slice at a time, the event loop turning in between", async () => {
    await timersPhase();
    const turns = new TurnCounter();
    const ticksAt: number[] = [];
    // 30 messages of 2 ms: at most three fit a slice, so the burst spans ten turns or more.
    await burst(30, 2, () => ticksAt.push(turns.count));
    turns.stop();
    expect(ticksAt[0]).toBe(0);
    // Taken all in one turn, no timer would have run before the last message.
    expect(ticksAt.at(-1)).toBeGreaterThanOrEqual(5);
    // A slice holds its budget's worth of messages: three of 2 ms (two slices between ticks
    // when a busy machine runs the timer late).
    const perTick = new Map<number, number>();
    for (const t of ticksAt) perTick.set(t, (perTick.get(t) ?? 0) + 1);
    expect(Math.max(...perTick.values())).toBeLessThanOrEqual(2 * (Math.ceil(SLICE_MS / 2) + 1));
  });

  it("keeps the order the messages came in, across slices", async () => {
    const order: number[] = [];
    const first = burst(12, 2, (i) => order.push(i));
    // Later arrivals, while the first burst is still being taken, queue behind it.
    await new Promise((resolve) => setImmediate(resolve));
    const second = burst(6, 2, (i) => order.push(100 + i));
    await Promise.all([first, second]);
    expect(order).toEqual([
      ...Array.from({ length: 12 }, (_, i) => i),
      ...[0, 1, 2, 3, 4, 5].map((i) => 100 + i),
    ]);
  });

  it("still lets messages through where a test fakes the timers", async () => {
    vi.useFakeTimers();
    let through = 0;
    await burst(5, 2, () => {
      through += 1;
    });
    expect(through).toBe(5);
  });
});
