import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator, waitFor } from "../../../test/emulators/slack/index.js";
import { WriteDropped, WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { ReportingWebClient } from "./app.js";
import { StreamBroken, StreamCalls } from "./stream-calls.js";
import { slackBuckets, slackWritePolicy } from "./write-policy.js";

let emu: SlackEmulator | undefined;
afterEach(async () => {
  await emu?.stop();
  emu = undefined;
});

describe("starting a native stream", () => {
  it("is refused on asking, without a turn in the scheduler's line, once Slack's Tier 2 has no room", async () => {
    emu = await SlackEmulator.start();
    const scheduler = new WriteScheduler(slackWritePolicy, "slack");
    const web = new ReportingWebClient(
      emu.botToken,
      { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } },
      undefined,
      scheduler,
    );
    const root = emu.mention("C1", "U_ALICE", "hello");
    const place = { team: "T1", channel: "C1", threadTs: root.ts, user: "U_ALICE" };
    const calls = () => new StreamCalls(web, scheduler, place, async () => undefined);
    const starts = () => emu!.api.calls.filter((c) => c.method === "chat.startStream").length;

    // With room, the start goes out.
    await expect(calls().send(null, "streamed", "first")).resolves.toMatch(/^\d+\.\d+$/);
    expect(starts()).toBe(1);
    // The rest of the minute's 20 starts, spent by other replies.
    for (let i = 1; i < 20; i++) {
      await scheduler.run({
        lane: "first",
        buckets: slackBuckets("chat.startStream", undefined),
        run: async () => undefined,
      });
    }

    const refused = await calls()
      .send(null, "posted instead", "first")
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(StreamBroken);
    expect((refused as StreamBroken).cause).toBeInstanceOf(WriteDropped);
    // Decided without a turn in the scheduler's line, where it would only have been dropped.
    expect(scheduler.stats.dropped).toBe(0);
    expect(starts()).toBe(1);
  });
});

describe("appending to a native stream through the workspace's scheduler", () => {
  /** A stream in C1 and a scheduler that knows the workspace's appendStream budget: `capacity` per second. */
  async function streaming(capacity: number) {
    emu = await SlackEmulator.start({ rateLimits: { enabled: false } });
    const scheduler = new WriteScheduler({
      limitOf: (b) => (b === "slack:chat.appendStream" ? { capacity, windowMs: 1_000 } : undefined),
    });
    const web = new ReportingWebClient(
      emu.botToken,
      { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } },
      undefined,
      scheduler,
    );
    const root = emu.mention("C1", "U_ALICE", "hello");
    const place = { team: "T1", channel: "C1", threadTs: root.ts, user: "U_ALICE" };
    const calls = new StreamCalls(web, scheduler, place, async () => undefined);
    const ts = await calls.send(null, "Hi", "first");
    const spend = () =>
      scheduler.run({
        lane: "final",
        buckets: slackBuckets("chat.appendStream", { channel: "C2" }),
        run: async () => undefined,
      });
    const appended = () =>
      emu!.api.calls.filter((c) => c.method === "chat.appendStream").map((c) => c.params.chunks);
    return { scheduler, calls, ts, spend, appended, emu };
  }

  it("asks the append's lane at every pick: one waiting as an update goes as final text once its answer ended", async () => {
    const { scheduler, calls, ts, spend, appended } = await streaming(5);
    // 3 of 5 spent: final text has room, an update (which leaves 40 % to it) has none.
    for (let i = 0; i < 3; i++) await spend();
    let ended = false;
    const sent = calls.send(ts, " there", () => (ended ? "final" : "update"));
    await waitFor(() => scheduler.backlog().update === 1);
    ended = true;
    // Any write asked for makes the scheduler pick again.
    void scheduler.run({ lane: "background", buckets: ["other"], run: async () => undefined });
    await sent;
    expect(appended()).toEqual([[{ type: "markdown_text", text: " there" }]]);
  });

  it("lets the stalest reply's append go first within a lane", async () => {
    const { calls, ts, spend, appended } = await streaming(2);
    await spend();
    await spend();
    // Asked for first, but its reply wrote just now; the other's reply has not written for a minute.
    const fresh = calls.send(ts, " fresh", "final", { since: () => Date.now() });
    const stale = calls.send(ts, " stale", "final", { since: () => Date.now() - 60_000 });
    await Promise.all([fresh, stale]);
    expect(appended().map((chunks) => (chunks as { text: string }[])[0]?.text)).toEqual([" stale", " fresh"]);
  });
});
