import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { DeadlineError, withDeadline } from "./signals.js";

describe("withDeadline", () => {
  it("gives up on work that ignores its signal, with an error naming the work and its deadline", async () => {
    const started = Date.now();
    const never = new Promise<never>(() => {});
    const err = await withDeadline("start-up", 200, () => never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeadlineError);
    expect((err as Error).message).toBe("start-up did not finish within 0.2 s");
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it("aborts the signal it hands the work when the deadline passes", async () => {
    let seen: AbortSignal | undefined;
    const err = await withDeadline("session end", 100, (signal) => {
      seen = signal;
      return sleep(10_000, undefined, { signal });
    }).catch((e: unknown) => e);
    expect(seen?.aborted).toBe(true);
    expect(err).toMatchObject({ name: "DeadlineError", message: "session end did not finish within 0.1 s" });
  });

  it("returns the work's result, and its own failure unchanged, before the deadline", async () => {
    expect(await withDeadline("lookup", 1_000, async () => 42)).toBe(42);
    const own = new Error("the server said no");
    await expect(withDeadline("lookup", 1_000, () => Promise.reject(own))).rejects.toBe(own);
  });

  it("rejects with the caller's reason, not as a missed deadline, when the caller aborts", async () => {
    const caller = new AbortController();
    const reason = new Error("shutting down");
    setTimeout(() => caller.abort(reason), 20);
    const err = await withDeadline("start-up", 10_000, () => new Promise(() => {}), caller.signal).catch(
      (e: unknown) => e,
    );
    expect(err).toBe(reason);
  });
});
