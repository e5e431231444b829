import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RateLimitedError } from "../message-ops.js";
import { type Call, FakeChannel } from "../stream.fake.js";
import { StreamWriter } from "../stream.js";
import { LocalBudgets } from "./budgets.js";
import { type BucketLimit, type Lane, WriteDropped, WriteScheduler } from "./write-scheduler.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

/** A scheduler whose buckets have the limits given (others none); wide buckets learn theirs. */
function scheduler(limits: Record<string, BucketLimit>, learned: Record<string, BucketLimit> = {}) {
  return new WriteScheduler({ limitOf: (b, l) => limits[b] ?? (l ? learned[b] : undefined) });
}

/** The most calls that fall in any window [t, t + ms), t being a call's time. */
function busiestWindow(times: number[], ms: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  return Math.max(...sorted.map((t) => sorted.filter((u) => u >= t && u < t + ms).length));
}

const settle = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e,
  );

describe("WriteScheduler", () => {
  it("lets a bucket's capacity go at once, then never more than that in any window", async () => {
    const s = scheduler({ b: { capacity: 5, windowMs: 5_000 } });
    const start = Date.now();
    const times: number[] = [];
    const all = Array.from({ length: 12 }, () =>
      s.run({ lane: "final", buckets: ["b"], run: async () => void times.push(Date.now() - start) }),
    );
    await vi.advanceTimersByTimeAsync(20_000);
    await Promise.all(all);
    expect(times.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    expect(times[5]).toBe(5_000);
    expect(busiestWindow(times, 5_000)).toBe(5);
  });

  it("runs the first visible writes, then final text, then updates, then background, whatever the order they came in", async () => {
    const s = scheduler({ b: { capacity: 1, windowMs: 1_000 } });
    await s.run({ lane: "final", buckets: ["b"], run: async () => undefined });
    const order: string[] = [];
    const lanes: Lane[] = ["background", "update", "final", "first", "update", "first"];
    const all = lanes.map((lane, i) =>
      s.run({ lane, buckets: ["b"], run: async () => void order.push(`${lane}${i}`) }),
    );
    await vi.advanceTimersByTimeAsync(10_000);
    await Promise.all(all);
    expect(order).toEqual(["first3", "first5", "final2", "update1", "update4", "background0"]);
  });

  it("serves the stalest thread first within a lane", async () => {
    const s = scheduler({ b: { capacity: 1, windowMs: 1_000 } });
    await s.run({ lane: "update", buckets: ["b"], run: async () => undefined });
    const order: string[] = [];
    const lastWrote = { fresh: 900, stale: 100, never: Number.NEGATIVE_INFINITY };
    const all = Object.entries(lastWrote).map(([name, at]) =>
      s.run({ lane: "final", buckets: ["b"], since: () => at, run: async () => void order.push(name) }),
    );
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all(all);
    expect(order).toEqual(["never", "stale", "fresh"]);
  });

  it("evaluates a waiting write's lane when it is picked: an update that became final jumps the line", async () => {
    const s = scheduler({ b: { capacity: 1, windowMs: 1_000 } });
    await s.run({ lane: "final", buckets: ["b"], run: async () => undefined });
    const order: string[] = [];
    let ended = false;
    const a = s.run({ lane: "update", buckets: ["b"], run: async () => void order.push("other update") });
    const b = s.run({
      lane: () => (ended ? "final" : "update"),
      buckets: ["b"],
      since: () => Number.POSITIVE_INFINITY,
      run: async () => void order.push("answer"),
    });
    ended = true;
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all([a, b]);
    expect(order).toEqual(["answer", "other update"]);
  });

  it("keeps part of a bucket for final text: updates stop short of it, a final write goes at once", async () => {
    const s = scheduler({ b: { capacity: 4, windowMs: 10_000 } });
    const updates: number[] = [];
    for (let i = 0; i < 6; i++) {
      void s.run({ lane: "update", buckets: ["b"], run: async () => void updates.push(Date.now()) });
    }
    await vi.advanceTimersByTimeAsync(100);
    expect(updates).toHaveLength(3);
    let finalAt = -1;
    const start = Date.now();
    await s.run({
      lane: "final",
      buckets: ["b"],
      run: async () => {
        finalAt = Date.now() - start;
      },
    });
    expect(finalAt).toBe(0);
  });

  it("pauses only the bucket a 429 concerns, for its Retry-After, and runs the write again after it", async () => {
    const s = scheduler({});
    const start = Date.now();
    const a: number[] = [];
    let limited = true;
    const first = s.run({
      lane: "final",
      buckets: ["channel:A"],
      run: async () => {
        a.push(Date.now() - start);
        if (limited) {
          limited = false;
          throw new RateLimitedError(3_000);
        }
      },
    });
    await vi.advanceTimersByTimeAsync(10);
    const other: number[] = [];
    const b = s.run({
      lane: "final",
      buckets: ["channel:B"],
      run: async () => void other.push(Date.now() - start),
    });
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all([first, b]);
    expect(a).toEqual([0, 3_000]);
    expect(other).toEqual([10]);
  });

  it("gives a refused write's place in the window back: its retry waits out the 429's pause, not its own grant", async () => {
    // The platform's window was still full by its clock when these writes arrived.
    const s = scheduler({ global: { capacity: 5, windowMs: 1_000 } });
    const start = Date.now();
    const times: number[] = [];
    let refusals = 2;
    const write = (k: number) =>
      s.run({
        lane: "first",
        buckets: ["global"],
        run: async () => {
          times.push(Date.now() - start);
          if (k >= 5 && refusals > 0) {
            refusals -= 1;
            throw new RateLimitedError(10);
          }
        },
      });
    const all = Array.from({ length: 10 }, (_, k) => write(k));
    await vi.advanceTimersByTimeAsync(3_000);
    await Promise.all(all);
    // Five at once, five a window later (two refused), and the two again after the 10 ms pause.
    expect(times).toEqual([0, 0, 0, 0, 0, 1_000, 1_000, 1_000, 1_000, 1_000, 1_010, 1_010]);
  });

  it("gives a grant back once when a client waits out a 429 itself and asks again as a new write", async () => {
    const s = scheduler({ b: { capacity: 2, windowMs: 1_000 } });
    const start = Date.now();
    const times: number[] = [];
    const refusedTwice = s.run({
      lane: "final",
      buckets: ["b"],
      run: async () => {
        times.push(Date.now() - start);
        s.callContext()?.refused?.();
        s.callContext()?.refused?.();
      },
    });
    const others = Array.from({ length: 3 }, () =>
      s.run({ lane: "final", buckets: ["b"], run: async () => void times.push(Date.now() - start) }),
    );
    await vi.advanceTimersByTimeAsync(2_000);
    await Promise.all([refusedTwice, ...others]);
    // The refused one's place goes to the next write; saying so twice frees no second place.
    expect(times).toEqual([0, 0, 0, 1_000]);
  });

  it("pauses a workspace-wide bucket once 429s hit two of its channels, and learns its limit then", async () => {
    const s = scheduler({}, { "update:*": { capacity: 2, windowMs: 60_000 } });
    const start = Date.now();
    const limitedOnce = new Set(["C1", "C2"]);
    const ran: Array<[string, number]> = [];
    /** The writes the platform took (a refused one does not count against its limit). */
    const taken: number[] = [];
    const write = (channel: string) =>
      s.run({
        lane: "final",
        buckets: [`update:${channel}`, "update:*"],
        run: async () => {
          ran.push([channel, Date.now() - start]);
          if (limitedOnce.delete(channel)) throw new RateLimitedError(2_000);
          taken.push(Date.now() - start);
        },
      });
    const c1 = write("C1");
    await vi.advanceTimersByTimeAsync(10);
    const c2 = write("C2");
    await vi.advanceTimersByTimeAsync(10);
    const c3 = write("C3");
    await vi.advanceTimersByTimeAsync(200_000);
    await Promise.all([c1, c2, c3]);
    // C3, in a channel that never met a 429, waits for the workspace: first its pause, then
    // the limit learned (2 a minute), as do C1's and C2's second attempts.
    const c3At = ran.find(([c]) => c === "C3")?.[1] ?? -1;
    expect(c3At).toBeGreaterThanOrEqual(2_010);
    expect(ran).toHaveLength(5);
    expect(taken).toHaveLength(3);
    expect(busiestWindow(taken, 60_000)).toBe(2);
  });

  it("takes 429s in two channels that each sent a whole workspace tier as their own limits, not the workspace's", async () => {
    const s = scheduler({}, { "update:*": { capacity: 3, windowMs: 60_000 } });
    const start = Date.now();
    const ran: Array<[string, number]> = [];
    const sent = new Map<string, number>();
    // Each channel takes 3 writes, then answers its 4th with a 429 (Slack's chat.update per channel).
    const write = (channel: string) =>
      s.run({
        lane: "final",
        buckets: [`update:${channel}`, "update:*"],
        run: async () => {
          const n = (sent.get(channel) ?? 0) + 1;
          sent.set(channel, n);
          ran.push([channel, Date.now() - start]);
          if (n === 4) throw new RateLimitedError(2_000);
        },
      });
    const busy = ["C1", "C2"].flatMap((c) => [1, 2, 3, 4].map(() => write(c)));
    await vi.advanceTimersByTimeAsync(10);
    // The workspace took six writes at once and nothing more than two channels' 429s came back.
    const c3 = write("C3");
    await vi.advanceTimersByTimeAsync(10);
    expect(ran.find(([c]) => c === "C3")?.[1]).toBeLessThan(20);
    // C1's and C2's fourth writes wait out their own channel's pause only.
    await vi.advanceTimersByTimeAsync(120_000);
    await Promise.all([...busy, c3]);
    expect(ran).toHaveLength(11);
    for (const c of ["C1", "C2"]) {
      const last = ran.filter(([d]) => d === c).at(-1)?.[1] ?? -1;
      expect(last).toBeGreaterThanOrEqual(2_000);
      expect(last).toBeLessThan(3_000);
    }
  });

  it("drops a background write that cannot start in time, without running it", async () => {
    const s = scheduler({ g: { capacity: 2, windowMs: 1_000 } });
    const ran: string[] = [];
    const finals = [1, 2, 3, 4].map((i) =>
      s.run({ lane: "final", buckets: ["g"], run: async () => void ran.push(`final${i}`) }),
    );
    const typing = settle(
      s.run({
        lane: "background",
        buckets: ["g"],
        dropAfterMs: 500,
        run: async () => void ran.push("typing"),
      }),
    );
    await vi.advanceTimersByTimeAsync(3_000);
    await Promise.all(finals);
    expect(await typing).toBeInstanceOf(WriteDropped);
    expect(ran).toEqual(["final1", "final2", "final3", "final4"]);
    expect(s.stats.dropped).toBe(1);
  });

  it("refuses at once a write that must start now when its budget has no room (native streams fall back)", async () => {
    const s = scheduler({ stream: { capacity: 1, windowMs: 60_000 } });
    await s.run({ lane: "first", buckets: ["stream"], now: true, run: async () => undefined });
    let ran = false;
    const second = settle(
      s.run({
        lane: "first",
        buckets: ["stream"],
        now: true,
        run: async () => {
          ran = true;
        },
      }),
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(await second).toBeInstanceOf(WriteDropped);
    expect(ran).toBe(false);
  });

  it("cancels a waiting write when its signal aborts, and never runs it", async () => {
    const s = scheduler({ b: { capacity: 1, windowMs: 10_000 } });
    await s.run({ lane: "final", buckets: ["b"], run: async () => undefined });
    const abort = new AbortController();
    let ran = false;
    const waiting = settle(
      s.run({
        lane: "update",
        buckets: ["b"],
        signal: abort.signal,
        run: async () => {
          ran = true;
        },
      }),
    );
    await vi.advanceTimersByTimeAsync(100);
    abort.abort();
    await vi.advanceTimersByTimeAsync(20_000);
    const dropped = await waiting;
    expect(dropped).toBeInstanceOf(WriteDropped);
    // Made without a stack (a dropped write is no fault), and the stack limit is left as it was.
    expect((dropped as Error).message).toBe("write not written: cancelled");
    expect((dropped as Error).stack).not.toMatch(/\n\s+at /);
    expect(Error.stackTraceLimit).toBeGreaterThan(0);
    expect(new Error("x").stack).toMatch(/\n\s+at /);
    expect(ran).toBe(false);
  });

  it("leaves no listener on a long-lived signal once its writes are done, run or dropped", async () => {
    const s = scheduler({ b: { capacity: 2, windowMs: 1_000 } });
    const stopping = new AbortController().signal;
    const writes = Array.from({ length: 30 }, (_, i) =>
      settle(
        s.run({
          lane: i % 3 === 0 ? "background" : "update",
          buckets: ["b"],
          signal: stopping,
          ...(i % 3 === 0 && { dropAfterMs: 500 }),
          run: async () => (i % 5 === 0 ? Promise.reject(new Error("platform error")) : i),
        }),
      ),
    );
    // One listener for all thirty: a listener each would be walked by every add (and warned of past ten).
    expect(getEventListeners(stopping, "abort").length).toBe(1);
    await vi.advanceTimersByTimeAsync(30_000);
    const outcomes = await Promise.all(writes);
    expect(outcomes.some((o) => o instanceof WriteDropped)).toBe(true);
    expect(outcomes.some((o) => o instanceof Error && !(o instanceof WriteDropped))).toBe(true);
    expect(getEventListeners(stopping, "abort")).toEqual([]);
  });

  it("cancels every write waiting with a shared signal when it aborts, and lets go of the signal", async () => {
    const s = scheduler({ b: { capacity: 1, windowMs: 10_000 } });
    const stopping = new AbortController();
    let ran = 0;
    const writes = Array.from({ length: 20 }, () =>
      settle(s.run({ lane: "update", buckets: ["b"], signal: stopping.signal, run: async () => void ran++ })),
    );
    await vi.advanceTimersByTimeAsync(100);
    expect(ran).toBe(1);
    stopping.abort();
    const outcomes = await Promise.all(writes);
    expect(outcomes.filter((o) => o instanceof WriteDropped)).toHaveLength(19);
    expect(getEventListeners(stopping.signal, "abort")).toEqual([]);
    // A write asked with the same signal afterwards is refused at once, as before.
    expect(
      await settle(s.run({ lane: "update", buckets: [], signal: stopping.signal, run: async () => 1 })),
    ).toBeInstanceOf(WriteDropped);
  });

  it("lets platform calls made inside a granted write through, and places others in their caller's lane", async () => {
    const s = scheduler({});
    const seen: unknown[] = [];
    await s.run({ lane: "final", buckets: [], run: async () => void seen.push(s.callContext()?.granted) });
    await s.as("background", async () => void seen.push(s.callContext()?.lane), { dropAfterMs: 5 });
    expect(seen).toEqual([true, "background"]);
  });

  it("weighs a crowd's waiting writes once per turn of the event loop, not once per write that ended", async () => {
    vi.useRealTimers();
    let weighed = 0;
    class Counted extends LocalBudgets {
      override wait(bucket: string, reserve: number, now: number): number {
        weighed += 1;
        return super.wait(bucket, reserve, now);
      }
    }
    const s = new WriteScheduler(new Counted({ limitOf: () => undefined }));
    // 100 threads' edits waiting on their paused channels, as in a crowd.
    const waiting = Array.from({ length: 100 }, (_, i) => {
      s.pause(`edit:C${i}`, 60_000);
      return settle(
        s.run({ lane: "update", buckets: [`edit:C${i}`], dropAfterMs: 200, run: async () => undefined }),
      );
    });
    // 30 answers whose writes end in the same turn of the event loop, each its own
    // callback there (as the platform's answers to them arrive).
    const order: string[] = [];
    const finals = Array.from({ length: 30 }, (_, i) =>
      s.run({
        lane: "final",
        buckets: [`post:C${i}`],
        run: () =>
          new Promise<void>((resolve) => setTimeout(resolve, 5)).then(() => void order.push(`final${i}`)),
      }),
    );
    await Promise.all(finals);
    expect(order).toHaveLength(30);
    // Weighing all of them after each of the 30 ends would ask the budgets some 3,000 times.
    expect(weighed).toBeLessThan(1_000);
    expect((await Promise.all(waiting)).every((r) => r instanceof WriteDropped)).toBe(true);
  });

  it("starts a crowd's first or final write at once when nothing above it wants its budget, without waiting for the pick", async () => {
    vi.useRealTimers();
    const s = scheduler({ "post:C0": { capacity: 1, windowMs: 60_000 } });
    // A crowd's edits waiting on their paused channels: picks wait for the event loop's next turn.
    const edits = Array.from({ length: 20 }, (_, i) => {
      s.pause(`edit:C${i}`, 60_000);
      return settle(
        s.run({ lane: "update", buckets: [`edit:C${i}`], dropAfterMs: 50, run: async () => undefined }),
      );
    });
    // A final write waiting for a paused wide bucket wants C0's post budget too, which has room.
    s.pause("wide", 60_000);
    const blocked = settle(
      s.run({ lane: "final", buckets: ["post:C0", "wide"], dropAfterMs: 50, run: async () => undefined }),
    );
    // Its pick made: none is pending when the writes below come.
    for (let i = 0; i < 2; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    const ran: string[] = [];
    const turned = new Promise<void>((resolve) =>
      setImmediate(() => {
        ran.push("next turn");
        resolve();
      }),
    );
    const free = s.run({ lane: "first", buckets: ["post:C1"], run: async () => void ran.push("C1") });
    // An update with room waits for the pick: updates rank below what may still come in that turn.
    const update = s.run({ lane: "update", buckets: ["post:C2"], run: async () => void ran.push("C2") });
    // A final write on a budget the waiting final write wants: the pick decides, as it always did.
    const shared = s.run({ lane: "final", buckets: ["post:C0"], run: async () => void ran.push("C0") });
    await Promise.all([free, update, shared, turned]);
    expect(ran.indexOf("C1")).toBe(0);
    expect(ran.indexOf("C0")).toBeGreaterThan(ran.indexOf("next turn"));
    expect(ran.indexOf("C2")).toBeGreaterThan(ran.indexOf("next turn"));
    expect(await blocked).toBeInstanceOf(WriteDropped);
    expect((await Promise.all(edits)).every((r) => r instanceof WriteDropped)).toBe(true);
  });

  it("gives a write up after eight 429s in a row, with the last one", async () => {
    const s = scheduler({});
    let attempts = 0;
    const result = settle(
      s.run({
        lane: "final",
        buckets: ["b"],
        run: async () => {
          attempts += 1;
          throw new RateLimitedError(100);
        },
      }),
    );
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await result).toBeInstanceOf(RateLimitedError);
    expect(attempts).toBe(8);
  });
});

/** A channel whose writes draw on per-channel and shared buckets, as a platform's would. */
function scheduled(prefix: string, buckets: { post: string[]; edit: string[] }, opts = {}) {
  const channel = new FakeChannel({ prefix, latencyMs: 20, ...opts });
  return Object.assign(channel, {
    buckets: (kind: "post" | "edit" | "remove") => (kind === "post" ? buckets.post : buckets.edit),
  });
}

describe("StreamWriters sharing one scheduler", () => {
  it("never exceeds a shared bucket with 20 answers streaming at once, and completes every answer", async () => {
    const s = scheduler({ shared: { capacity: 5, windowMs: 1_000 } });
    const channels = Array.from({ length: 20 }, (_, k) =>
      scheduled(`w${k}-`, { post: ["shared"], edit: ["shared"] }),
    );
    const writers = channels.map((c) => new StreamWriter(c, { limit: 300, intervalMs: 200, scheduler: s }));
    const answers = channels.map((_, k) => `Answer ${k}: ${"word ".repeat(120)}`);
    for (let i = 0; i < 60; i++) {
      for (const [k, w] of writers.entries()) w.write(answers[k]!.slice(i * 10, i * 10 + 10));
      await vi.advanceTimersByTimeAsync(50);
    }
    for (const [k, w] of writers.entries()) w.write(answers[k]!.slice(600));
    const done = Promise.all(writers.map((w) => w.finish()));
    await vi.advanceTimersByTimeAsync(120_000);
    await done;
    const calls: Call[] = channels.flatMap((c) => c.calls.filter((x) => x.ok));
    expect(
      busiestWindow(
        calls.map((c) => c.at),
        1_000,
      ),
    ).toBeLessThanOrEqual(5);
    for (const [k, c] of channels.entries()) expect(c.texts().join("")).toBe(answers[k]);
  });

  it("spreads a crowd's intermediate edits to 50 a second in all, where one reply alone keeps its interval", async () => {
    /** Streams `n` answers for 6 s through one scheduler; each channel's edits before the answer's end. */
    const stream = async (n: number) => {
      const s = scheduler({});
      const channels = Array.from({ length: n }, (_, k) => scheduled(`e${k}-`, { post: [], edit: [] }));
      const writers = channels.map(
        (c) => new StreamWriter(c, { limit: 4000, intervalMs: 200, scheduler: s }),
      );
      const answers = channels.map((_, k) => `Answer ${k}: ${"word ".repeat(120)}`);
      for (let i = 0; i < 60; i++) {
        for (const [k, w] of writers.entries()) w.write(answers[k]!.slice(i * 10, i * 10 + 10));
        await vi.advanceTimersByTimeAsync(100);
      }
      const ending = Date.now();
      for (const [k, w] of writers.entries()) w.write(answers[k]!.slice(600));
      const done = Promise.all(writers.map((w) => w.finish()));
      await vi.advanceTimersByTimeAsync(10_000);
      await done;
      for (const [k, c] of channels.entries()) expect(c.texts().join("")).toBe(answers[k]);
      return channels.map((c) => c.calls.filter((x) => x.ok && x.op === "edit" && x.at < ending).length);
    };
    // Alone: an edit every 200 ms of the 6 s.
    const [alone = 0] = await stream(1);
    expect(alone).toBeGreaterThanOrEqual(20);
    // A hundred at once: 50 edits a second among them, an edit every 2 s each.
    const crowd = await stream(100);
    expect(Math.max(...crowd)).toBeLessThanOrEqual(3);
    expect(Math.min(...crowd)).toBeGreaterThanOrEqual(2);
  });

  it("counts a reply as streaming only until its answer ends", () => {
    const s = scheduler({});
    const replies = Array.from({ length: 100 }, () => ({}));
    for (const r of replies) s.cadence.streaming(r);
    expect(s.cadence.editInterval(1_000)).toBe(2_000);
    for (const r of replies.slice(50)) s.cadence.streamEnded(r);
    expect(s.cadence.editInterval(1_000)).toBe(1_000);
    // A reply that stopped without saying so stops counting once it has been quiet for 30 s.
    const start = Date.now();
    for (const r of replies) s.cadence.streaming(r, start);
    expect(s.cadence.editInterval(200, start + 29_000)).toBe(2_000);
    s.cadence.streaming(replies[0]!, start + 29_500);
    expect(s.cadence.editInterval(200, start + 30_500)).toBe(200);
  });

  it("shows every thread's first message before any thread's intermediate edits", async () => {
    const s = scheduler({ shared: { capacity: 4, windowMs: 1_000 } });
    const channels = Array.from({ length: 12 }, (_, k) =>
      scheduled(`f${k}-`, { post: ["shared"], edit: ["shared"] }),
    );
    const writers = channels.map((c) => new StreamWriter(c, { limit: 2000, intervalMs: 100, scheduler: s }));
    for (let i = 0; i < 30; i++) {
      for (const w of writers) w.write(`${i} `);
      await vi.advanceTimersByTimeAsync(100);
    }
    const done = Promise.all(writers.map((w) => w.finish()));
    await vi.advanceTimersByTimeAsync(60_000);
    await done;
    const all = channels.flatMap((c) => c.calls.filter((x) => x.ok)).sort((a, b) => a.at - b.at);
    const lastPost = Math.max(...all.filter((c) => c.op === "post").map((c) => c.at));
    const firstEdit = Math.min(...all.filter((c) => c.op === "edit").map((c) => c.at));
    expect(lastPost).toBeLessThanOrEqual(firstEdit);
  });

  it("goes on in a new message when the edit budget is spent for long, and the messages joined are exactly the answer", async () => {
    // Edits draw on a workspace bucket that a 429 closed for a minute; posts on their own.
    const s = scheduler({});
    const channel = scheduled("c-", { post: ["post:C1"], edit: ["update:C1", "update:*"] });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 200, scheduler: s });
    writer.write("The first words of the answer, ");
    await vi.advanceTimersByTimeAsync(50);
    s.pause("update:*", 60_000);
    writer.write("and the rest of it, which came while no edit could go out.");
    await vi.advanceTimersByTimeAsync(1_000);
    const start = Date.now();
    const done = writer.finish();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await settle(done)).toBeNull();
    expect(Date.now() - start).toBeLessThan(60_000);
    expect(channel.callsOf("post").filter((c) => c.ok)).toHaveLength(2);
    expect(channel.texts().join("")).toBe(
      "The first words of the answer, and the rest of it, which came while no edit could go out.",
    );
  });

  it("keeps the answer in its message when posts wait as long as edits, however the clock ticks between its looks", async () => {
    // Discord's posts and edits share the channel's bucket: a new message would wait as long.
    const s = scheduler({});
    const channel = scheduled("d-", { post: ["channel:D1"], edit: ["channel:D1"] });
    const writer = new StreamWriter(channel, { limit: 2000, intervalMs: 200, scheduler: s });
    writer.write("The first words of the answer, ");
    await vi.advanceTimersByTimeAsync(50);
    s.pause("channel:D1", 5_000);
    writer.write("and the rest of it.");
    await vi.advanceTimersByTimeAsync(1_000);
    // A busy machine: the clock moves on between any two readings of it.
    const clock = Date.now;
    let ticks = 0;
    const ticking = vi.spyOn(Date, "now").mockImplementation(() => clock() + ++ticks);
    try {
      const done = writer.finish();
      await vi.advanceTimersByTimeAsync(10_000);
      expect(await settle(done)).toBeNull();
    } finally {
      ticking.mockRestore();
    }
    expect(channel.callsOf("post").filter((c) => c.ok)).toHaveLength(1);
    expect(channel.texts()).toEqual(["The first words of the answer, and the rest of it."]);
  });

  it("never sends a paused bucket's writes during the pause, for every writer sharing it", async () => {
    const s = scheduler({});
    let limitedAt = -1;
    const a = scheduled(
      "a",
      { post: ["shared"], edit: ["shared"] },
      {
        failEdit: (n: number) => {
          if (n !== 2) return null;
          limitedAt = Date.now();
          return new RateLimitedError(5_000);
        },
      },
    );
    const b = scheduled("b", { post: ["shared"], edit: ["shared"] });
    const writers = [a, b].map((c) => new StreamWriter(c, { limit: 2000, intervalMs: 100, scheduler: s }));
    for (let i = 0; i < 40; i++) {
      for (const w of writers) w.write(`${i} `);
      await vi.advanceTimersByTimeAsync(150);
    }
    const done = Promise.all(writers.map((w) => w.finish()));
    await vi.advanceTimersByTimeAsync(30_000);
    await done;
    expect(limitedAt).toBeGreaterThan(0);
    const during = [...a.calls, ...b.calls].filter((c) => c.at > limitedAt && c.at < limitedAt + 5_000);
    expect(during).toEqual([]);
    expect(b.calls.some((c) => c.at >= limitedAt + 5_000)).toBe(true);
  });
});
