import { createHmac } from "node:crypto";
import { rmSync } from "node:fs";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { appMentionEvent, eventCallback } from "../emulators/slack/events.js";
import { type EmuMessage, SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { killStarted, type Running, startSwitchboard, waitUntil } from "../support/process.js";

/** What the person wrote, without the "[name] " the agent puts before it. */
const said = (req: RecordedRequest) => lastUserText(req).replace(/^\[[^\]]*\]\s*/, "");

/** A port nothing listens on right now (slack.port cannot be 0: Slack needs to know it). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** An event request as Slack signs it: `v0=` HMAC-SHA256 of `v0:<timestamp>:<body>`. */
function signed(body: string, secret: string, timestamp = Math.floor(Date.now() / 1000)) {
  const signature = `v0=${createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest("hex")}`;
  return {
    "content-type": "application/json",
    "x-slack-request-timestamp": String(timestamp),
    "x-slack-signature": signature,
  };
}

describe("`switchboard start` with Slack over HTTP (signing secret, no app token)", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let dir: string;
  let bot: Running;
  let url: string;

  beforeAll(async () => {
    llm = await LlmEmulator.start({
      responder: (req) => ({ text: isTitleRequest(req) ? "Over HTTP" : `You said: ${said(req)}` }),
    });
    slack = await SlackEmulator.start();
    dir = scratchConfig("llm:\n  maxRetries: 0\n");
    const port = await freePort();
    const { SLACK_APP_TOKEN: _socketMode, ...env } = appEnv({ dir, llm, slack });
    bot = startSwitchboard("start", {
      ...env,
      SLACK_SIGNING_SECRET: slack.signingSecret,
      PORT: String(port),
      LOG_LEVEL: "info",
    });
    await waitUntil(() => bot.stderr().includes('"msg":"Switchboard is running"'), "the bot to start");
    url = `http://127.0.0.1:${port}/slack/events`;
    slack.useHttp(url);
  }, 60_000);

  afterAll(async () => {
    killStarted();
    await slack?.stop();
    await llm?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const replies = (m: EmuMessage) => slack.botReplies(m.channel, m.ts).map((r) => r.text);
  const requestsFor = (text: string) => llm.requests.filter((r) => !isTitleRequest(r) && said(r) === text);
  /** Waits until the bot's replies under `m` read exactly `expected`. */
  const answered = (m: EmuMessage, expected: string[]) =>
    waitFor(() => JSON.stringify(replies(m)) === JSON.stringify(expected), { timeoutMs: 20_000 });

  it("answers a signed mention in its thread, and acks each delivery", async () => {
    const m = slack.mention("C1", "U_ALICE", "hello over http");
    await answered(m, ["You said: hello over http"]);
    const deliveries = slack.delivery.deliveries.filter(
      (d) => (d.payload.event as { ts?: string }).ts === m.ts,
    );
    // app_mention and message, each acked with a 200 at the first attempt.
    expect(deliveries.map((d) => [d.acked, d.envelopeIds.length])).toEqual([
      [true, 1],
      [true, 1],
    ]);
  });

  it("answers once when Slack retries the delivery with X-Slack-Retry-Num", async () => {
    // The second copy of each event comes with X-Slack-Retry-Num: 1, as after a lost ack.
    const m = slack.mention("C1", "U_ALICE", "retry please", { times: 2 });
    await answered(m, ["You said: retry please"]);
    // A later message in the thread is answered after any turn the retry could have queued.
    slack.post("C1", "U_ALICE", "and after the retry", { threadTs: m.ts });
    await answered(m, ["You said: retry please", "You said: and after the retry"]);
    expect(requestsFor("retry please")).toHaveLength(1);
    const mentions = slack.delivery.deliveries.filter(
      (d) => d.type === "events_api" && (d.payload.event as { ts?: string; type?: string }).ts === m.ts,
    );
    expect(mentions).toHaveLength(4);
    expect(mentions.every((d) => d.acked)).toBe(true);
  });

  it("refuses a request signed with another secret, or signed too long ago, with 401", async () => {
    const request = (text: string) => {
      const m = slack.state.addMessage({ channel: "C1", user: "U_ALICE", text: `<@U_BOT> ${text}` });
      return { m, body: JSON.stringify(eventCallback(appMentionEvent(m, slack.baseUrl))) };
    };
    const post = (body: string, headers: Record<string, string>) =>
      fetch(url, { method: "POST", headers, body }).then((res) => res.status);
    const forged = request("forged with another secret");
    expect(await post(forged.body, signed(forged.body, "not-the-signing-secret"))).toBe(401);
    // Slack's replay protection: a timestamp more than five minutes old.
    const replayed = request("replayed from long ago");
    const stale = Math.floor(Date.now() / 1000) - 10 * 60;
    expect(await post(replayed.body, signed(replayed.body, slack.signingSecret, stale))).toBe(401);
    // A request signed now with the right secret is taken and answered; the refused ones never are.
    const genuine = request("signed just now");
    expect(await post(genuine.body, signed(genuine.body, slack.signingSecret))).toBe(200);
    await answered(genuine.m, ["You said: signed just now"]);
    expect(requestsFor("forged with another secret")).toEqual([]);
    expect(requestsFor("replayed from long ago")).toEqual([]);
    expect(replies(forged.m)).toEqual([]);
    expect(replies(replayed.m)).toEqual([]);
  });

  it("stops listening on SIGTERM and exits 0", async () => {
    bot.child.kill("SIGTERM");
    expect(await bot.exited).toBe(0);
    await expect(fetch(url, { method: "POST", body: "{}" })).rejects.toThrow();
  });
});
