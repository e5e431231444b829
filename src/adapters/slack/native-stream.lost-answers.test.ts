import { LogLevel } from "@slack/web-api";
import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "../../../test/emulators/slack/index.js";
import { WriteScheduler } from "../../runtime/scheduler/write-scheduler.js";
import { StreamWriter } from "../../runtime/stream.js";
import { ReportingWebClient } from "./app.js";
import { slackMessageOps } from "./message-ops.js";
import { NativeStream } from "./native-stream.js";
import { webApiFetch } from "./web-api-fetch.js";

let emu: SlackEmulator | undefined;
afterEach(async () => {
  await emu?.stop();
  emu = undefined;
});

const ANSWER = "One two three. Four five six. Seven eight nine. Ten eleven twelve.";

/** Streams ANSWER in pieces of 15 characters, 150 ms apart, through a writes client as the bot's. */
async function streamAnswer(emu: SlackEmulator) {
  const web = new ReportingWebClient(
    emu.botToken,
    {
      slackApiUrl: emu.apiUrl,
      fetch: webApiFetch,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      // The lost answer's "http request failed" is what the test is about.
      logLevel: LogLevel.ERROR,
    },
    undefined,
    new WriteScheduler({ limitOf: () => undefined }),
  );
  const root = emu.mention("C1", "U_ALICE", "count for me");
  const place = { team: "T1", channel: "C1", threadTs: root.ts, user: "U_ALICE" };
  const stream = new NativeStream(
    web,
    web.scheduler,
    place,
    { segmentChars: 3_900, lifetimeMs: 300_000, intervalMs: 100 },
    (md) => md,
    () => new StreamWriter(slackMessageOps(web, place), { limit: 3_900, intervalMs: 0 }),
  );
  for (let i = 0; i < ANSWER.length; i += 15) {
    stream.write(ANSWER.slice(i, i + 15));
    await new Promise((r) => setTimeout(r, 150));
  }
  await stream.finish();
  return emu.botReplies("C1", root.ts);
}

describe("a native stream call that Slack applied but whose answer was lost", () => {
  it("goes on after an append that landed, its text shown once", async () => {
    emu = await SlackEmulator.start({ rateLimits: { enabled: false } });
    let appends = 0;
    emu.api.loseAnswer("chat.appendStream", { when: () => ++appends === 2 });
    const replies = await streamAnswer(emu);
    expect(emu.api.calls.filter((c) => c.lost).map((c) => c.method)).toEqual(["chat.appendStream"]);
    expect(replies.map((r) => [r.text, r.stream?.state])).toEqual([[ANSWER, "stopped"]]);
  });

  it("finds the stream a start made and goes on in it, its text shown once and the stream stopped", async () => {
    emu = await SlackEmulator.start({ rateLimits: { enabled: false } });
    emu.api.loseAnswer("chat.startStream");
    const replies = await streamAnswer(emu);
    expect(emu.api.calls.filter((c) => c.lost).map((c) => c.method)).toEqual(["chat.startStream"]);
    expect(replies.map((r) => [r.text, r.stream?.state])).toEqual([[ANSWER, "stopped"]]);
  });

  it("hands the rest from before an append that never landed to post + update, nothing lost or repeated", async () => {
    emu = await SlackEmulator.start({ rateLimits: { enabled: false } });
    let appends = 0;
    emu.api.loseAnswer("chat.appendStream", { when: () => ++appends === 2, unapplied: true });
    const replies = await streamAnswer(emu);
    expect(emu.api.calls.filter((c) => c.lost).map((c) => [c.method, c.ok])).toEqual([
      ["chat.appendStream", false],
    ]);
    expect(replies.length).toBe(2);
    expect(replies[0]?.stream?.state).toBe("stopped");
    expect(replies.map((r) => r.text).join("")).toBe(ANSWER);
  });
});
