import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type Harness, startHarness } from "../../../test/emulators/slack/adapter-harness.js";
import { waitFor } from "../../../test/emulators/slack/index.js";
import { STATUS_REFRESH_MS, StatusRefresh } from "./status-refresh.js";

describe("StatusRefresh", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function refresher() {
    const sent: { status: string; at: number; signal: AbortSignal }[] = [];
    const start = Date.now();
    const refresh = new StatusRefresh(async (status, signal) => {
      sent.push({ status, at: Date.now() - start, signal });
    });
    return { refresh, sent };
  }

  it("sets the status again every 90 s while the answer has no text after it, counted from when it was set", async () => {
    const { refresh, sent } = refresher();
    refresh.set("is thinking…");
    await vi.advanceTimersByTimeAsync(30_000);
    // The answer starts 30 s after the acknowledgement set the status: Slack's 2 minutes began then.
    refresh.start();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sent.map((s) => [s.status, s.at])).toEqual([["is thinking…", 90_000]]);
    refresh.set("Calling github__search_issues…");
    await vi.advanceTimersByTimeAsync(2 * STATUS_REFRESH_MS);
    expect(sent.map((s) => [s.status, s.at])).toEqual([
      ["is thinking…", 90_000],
      ["Calling github__search_issues…", 180_000],
      ["Calling github__search_issues…", 270_000],
    ]);
  });

  it("stops once text comes after the status, starts again with the next status, and never after the answer's end", async () => {
    const { refresh, sent } = refresher();
    refresh.start();
    refresh.set("is thinking…");
    await vi.advanceTimersByTimeAsync(60_000);
    refresh.quiet();
    await vi.advanceTimersByTimeAsync(5 * STATUS_REFRESH_MS);
    expect(sent).toEqual([]);
    refresh.set("Calling everything__echo…");
    await vi.advanceTimersByTimeAsync(STATUS_REFRESH_MS);
    expect(sent.map((s) => s.status)).toEqual(["Calling everything__echo…"]);
    refresh.stop();
    await vi.advanceTimersByTimeAsync(5 * STATUS_REFRESH_MS);
    expect(sent).toHaveLength(1);
    refresh.set("");
    await vi.advanceTimersByTimeAsync(5 * STATUS_REFRESH_MS);
    expect(sent).toHaveLength(1);
  });

  it("calls off a refresh still waiting to go out when text comes", async () => {
    let release: () => void = () => undefined;
    const signals: AbortSignal[] = [];
    const refresh = new StatusRefresh(
      (_status, signal) =>
        new Promise<void>((resolve) => {
          signals.push(signal);
          release = resolve;
        }),
    );
    refresh.start();
    refresh.set("is thinking…");
    await vi.advanceTimersByTimeAsync(STATUS_REFRESH_MS);
    expect(signals).toHaveLength(1);
    refresh.quiet();
    expect(signals[0]?.aborted).toBe(true);
    release();
  });
});

describe("Slack adapter: an assistant thread's status during a long wait", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it("keeps the status shown past Slack's timeout while no text has come, and lets it go once the answer ends", async () => {
    // Slack's 2 minutes and the bot's 90 s, shortened alike.
    h = await startHarness({
      emulator: { assistantStatusTimeoutMs: 1_200 },
      adapter: { statusRefreshMs: 800 },
    });
    let release: () => void = () => undefined;
    const answered = new Promise<void>((resolve) => {
      release = resolve;
    });
    h.runner.script = async (inbound) => {
      const sink = inbound.reply.stream();
      await inbound.reply.status("Calling github__search_issues…");
      await answered;
      sink.write("Found 3 issues.");
      await sink.finish();
    };
    const { channel, threadTs } = h.emu.startAssistantThread("U_ALICE");
    h.emu.dm("U_ALICE", "find login issues", { threadTs });
    const thread = () => h!.emu.state.assistant.get(`${channel}:${threadTs}`);
    await waitFor(() => thread()?.status === "Calling github__search_issues…");
    // Three of Slack's timeouts: without the refresh, the thread showed nothing after the first.
    for (let i = 0; i < 12; i++) {
      await new Promise((r) => setTimeout(r, 300));
      expect(thread()?.status).toBe("Calling github__search_issues…");
    }
    const refreshes = h.emu.api.calls.filter(
      (c) =>
        c.method === "assistant.threads.setStatus" && c.params.status === "Calling github__search_issues…",
    );
    expect(refreshes.length).toBeGreaterThanOrEqual(4);
    release();
    const setStatus = () => h!.emu.api.calls.filter((c) => c.method === "assistant.threads.setStatus");
    await waitFor(
      () => h!.emu.botReplies(channel, threadTs).length === 1 && setStatus().at(-1)?.params.status === "",
    );
    const after = setStatus().length;
    await new Promise((r) => setTimeout(r, 1_000));
    expect(setStatus()).toHaveLength(after);
  });
});
