import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "../../../test/emulators/slack/index.js";
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
