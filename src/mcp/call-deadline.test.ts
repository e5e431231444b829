import { setTimeout as sleep } from "node:timers/promises";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { CallDeadline } from "./call-deadline.js";
import { type Asker, askConversation } from "./elicitation.js";
import { McpHub } from "./hub.js";
import { EVERYTHING, stdio } from "./testkit.js";
import type { ElicitationAnswer } from "./types.js";

describe("a call's deadline", () => {
  afterEach(() => vi.useRealTimers());

  const timedOut = (d: CallDeadline) =>
    d.signal.aborted &&
    d.signal.reason instanceof McpError &&
    d.signal.reason.code === ErrorCode.RequestTimeout;

  it("runs out after its idle time, which progress renews", () => {
    vi.useFakeTimers();
    const d = new CallDeadline(1_000, 10_000);
    vi.advanceTimersByTime(900);
    d.renew();
    vi.advanceTimersByTime(900);
    expect(d.signal.aborted).toBe(false);
    vi.advanceTimersByTime(100);
    expect(timedOut(d)).toBe(true);
  });

  it("stands still while a question is open, and restarts in full once it is answered", async () => {
    vi.useFakeTimers();
    const d = new CallDeadline(1_000, 10_000);
    vi.advanceTimersByTime(900);
    let answer: (v: string) => void = () => {};
    const asked = d.during(new Promise<string>((resolve) => (answer = resolve)));
    // Progress while asking does not start the clock either.
    d.renew();
    vi.advanceTimersByTime(60_000);
    expect(d.signal.aborted).toBe(false);
    answer("filled in");
    await expect(asked).resolves.toBe("filled in");
    vi.advanceTimersByTime(999);
    expect(d.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(timedOut(d)).toBe(true);
  });

  it("times nothing once disposed, also when a question settles after the call ended", async () => {
    vi.useFakeTimers();
    const d = new CallDeadline(1_000, 10_000);
    let answer: () => void = () => {};
    const asked = d.during(new Promise<void>((resolve) => (answer = resolve)));
    d.dispose();
    answer();
    await asked;
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(5_000);
    expect(d.signal.aborted).toBe(false);
  });

  it("stops every call of the conversation while its question is open, and withdraws it only once all have ended", async () => {
    vi.useFakeTimers();
    const older = { deadline: new CallDeadline(1_000, 60_000), over: new AbortController() };
    const newer = { deadline: new CallDeadline(1_000, 60_000), over: new AbortController() };
    let seen: AbortSignal | undefined;
    let answer: (a: ElicitationAnswer) => void = () => {};
    const asked: Asker[] = [older, newer].map((c, i) => ({
      elicit: (_q, signal) => {
        seen = signal;
        return new Promise<ElicitationAnswer>((resolve) => (answer = resolve));
      },
      conversation: "c",
      startedAt: i,
      deadline: c.deadline,
      over: c.over.signal,
    }));
    const question = askConversation(
      asked,
      { mode: "form", server: "s", message: "m", fields: [] },
      new AbortController().signal,
    );
    // The person takes a minute: neither call times out.
    vi.advanceTimersByTime(60_000);
    expect(older.deadline.signal.aborted || newer.deadline.signal.aborted).toBe(false);
    // The newer call ends first: the older one may still be the one that asked.
    newer.over.abort();
    expect(seen?.aborted).toBe(false);
    older.over.abort();
    expect(seen?.aborted).toBe(true);
    answer({ action: "cancel" });
    await question;
  });

  it("caps the call's running time, questions left out, however often progress comes", async () => {
    vi.useFakeTimers();
    const d = new CallDeadline(1_000, 3_000);
    for (let i = 0; i < 4; i++) {
      vi.advanceTimersByTime(500);
      d.renew();
    }
    // 2 s run; a minute-long question does not count.
    const question = d.during(new Promise((resolve) => setTimeout(resolve, 60_000)));
    await vi.advanceTimersByTimeAsync(60_000);
    await question;
    expect(d.signal.aborted).toBe(false);
    vi.advanceTimersByTime(999);
    expect(d.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(timedOut(d)).toBe(true);
  });
});

describe("a tool call whose server asks its person something", () => {
  let hub: McpHub;

  beforeAll(async () => {
    hub = await McpHub.start(
      // A timeout far shorter than a person takes over a form.
      [
        stdio("everything", [EVERYTHING], {
          timeoutMs: 800,
          enabledTools: ["trigger-elicitation-request", "trigger-long-running-operation"],
        }),
      ],
      {
        callTimeoutMs: 800,
        connectTimeoutMs: 20_000,
        maxOutputChars: 10_000,
        blockedServers: [],
        maxRestarts: 3,
      },
    );
  });

  afterAll(() => hub?.close());

  it("waits for a person who takes longer than the call's timeout, then gets the answer", async () => {
    const out = await hub.call(
      "everything__trigger-elicitation-request",
      {},
      {
        conversation: "slack:T1:C1:1.0",
        elicit: async () => {
          await sleep(2_000);
          return { action: "accept", content: { name: "Ada Lovelace" } };
        },
      },
    );
    expect(out.ok).toBe(true);
    expect(out.text).toContain("Ada Lovelace");
  });

  it("withdraws the question when the person stops the turn", async () => {
    const stop = new AbortController();
    let withdrawn = false;
    const pending = hub.call(
      "everything__trigger-elicitation-request",
      {},
      {
        signal: stop.signal,
        conversation: "slack:T1:C1:2.0",
        elicit: (_question, signal) =>
          new Promise((resolve) =>
            signal.addEventListener(
              "abort",
              () => {
                withdrawn = true;
                resolve({ action: "cancel" });
              },
              { once: true },
            ),
          ),
      },
    );
    setTimeout(() => stop.abort(), 300);
    const out = await pending;
    expect(out.ok).toBe(false);
    expect(out.text).toContain("cancelled");
    expect(withdrawn).toBe(true);
  });
});
