import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator, waitFor } from "../../../test/emulators/slack/index.js";
import { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { StreamWriter } from "../../runtime/stream.js";
import { ReportingWebClient } from "./app.js";
import { slackMessageOps } from "./message-ops.js";
import { NativeStream } from "./native-stream.js";
import { slackBuckets } from "./write-policy.js";

let emu: SlackEmulator | undefined;
let crowd: ReturnType<typeof setInterval> | undefined;
afterEach(async () => {
  clearInterval(crowd);
  await emu?.stop();
  emu = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A workspace whose chat.appendStream budget is known (as once learnt from 429s): 10 per
 * 2 s. Other threads' final texts, one per 250 ms, keep 8 of them spent: final text has
 * room, an intermediate append (which leaves 40 % to final text) has none while they go on.
 */
async function busyWorkspace() {
  emu = await SlackEmulator.start({ rateLimits: { enabled: false } });
  const scheduler = new WriteScheduler({
    limitOf: (bucket) =>
      bucket === "slack:chat.appendStream" ? { capacity: 10, windowMs: 2_000 } : undefined,
  });
  const web = new ReportingWebClient(
    emu.botToken,
    { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true },
    undefined,
    scheduler,
  );
  const othersFinal = () =>
    void scheduler.run({
      lane: "final",
      buckets: slackBuckets("chat.appendStream", { channel: "C2" }),
      run: async () => undefined,
    });
  return { emu, scheduler, web, busy: () => setInterval(othersFinal, 250) };
}

describe("a native stream's final text under a busy workspace", () => {
  it("goes at once, in one append that also carries the text an intermediate append was waiting with", async () => {
    const { emu, web, scheduler, busy } = await busyWorkspace();
    const root = emu.mention("C1", "U_ALICE", "hello");
    const place = { team: "T1", channel: "C1", threadTs: root.ts, user: "U_ALICE" };
    const stream = new NativeStream(
      web,
      scheduler,
      place,
      { segmentChars: 3_900, lifetimeMs: 300_000, intervalMs: 100 },
      (md) => md,
      () => new StreamWriter(slackMessageOps(web, place), { limit: 3_900, intervalMs: 0 }),
    );
    stream.write("Hello ");
    await waitFor(() => emu.botReplies("C1", root.ts).length === 1);
    crowd = busy();
    await sleep(2_200);
    stream.write("world, ");
    // The append with "world, " waits as an update: the crowd keeps the budget above its reserve.
    await waitFor(() => scheduler.backlog().update === 1);
    stream.write("and the rest of the answer.");
    const asked = Date.now();
    const finished = stream.finish().then(() => Date.now() - asked);
    const took = await Promise.race([finished, sleep(3_000).then(() => Number.POSITIVE_INFINITY)]);
    clearInterval(crowd);
    await finished;

    expect(took).toBeLessThan(1_000);
    const appends = emu.api.calls.filter((c) => c.method === "chat.appendStream");
    expect(appends.map((c) => c.params.chunks)).toEqual([
      [{ type: "markdown_text", text: "world, and the rest of the answer." }],
    ]);
    const replies = emu.botReplies("C1", root.ts);
    expect(replies.map((r) => [r.text, r.stream?.state])).toEqual([
      ["Hello world, and the rest of the answer.", "stopped"],
    ]);
    expect(stream.fellBack).toBe(false);
  });
});
