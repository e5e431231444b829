import { ErrorCode, LogLevel, WebClient } from "@slack/web-api";
import { afterEach, describe, expect, it } from "vitest";
import { SLACK_PER_CHANNEL_LIMITS, SlackEmulator, type SlackEmulatorOptions } from "./index.js";
import { rawCall } from "./raw-call.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function emulator(options: SlackEmulatorOptions = {}): Promise<SlackEmulator> {
  const emu = await SlackEmulator.start(options);
  cleanups.push(() => emu.stop());
  return emu;
}

/** A naive client: no retries, and a 429 comes back as an error instead of a pause. */
function client(emu: SlackEmulator): WebClient {
  return new WebClient(emu.botToken, {
    slackApiUrl: emu.apiUrl,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logLevel: LogLevel.ERROR,
  });
}

/** "ok", or "429 after N" with the Retry-After the WebClient read, or the error code. */
function outcome(call: Promise<unknown>): Promise<string> {
  return call.then(
    () => "ok",
    (e: { code?: string; retryAfter?: number }) =>
      e.code === ErrorCode.RateLimitedError ? `429 after ${e.retryAfter}` : String(e.code),
  );
}

/** `count` new channels, each with one message of the bot's to update. */
async function channelsWithMessages(
  emu: SlackEmulator,
  web: WebClient,
  count: number,
): Promise<{ channel: string; ts: string }[]> {
  const channels = Array.from({ length: count }, (_, i) => `C${200 + i}`);
  for (const c of channels) emu.state.addChannel(c, c.toLowerCase());
  const posted = await Promise.all(channels.map((channel) => web.chat.postMessage({ channel, text: "0" })));
  return posted.map((p, i) => ({ channel: channels[i] ?? "", ts: p.ts ?? "" }));
}

const retryAfterOf = (result: string | undefined) => Number(/^429 after (\d+)$/.exec(result ?? "")?.[1]);

describe("Slack emulator: per-channel limits (SLACK_PER_CHANNEL_LIMITS)", () => {
  it("states the busy-workspace numbers: chat.update 1/s and chat.appendStream 2/s per channel", () => {
    expect(SLACK_PER_CHANNEL_LIMITS).toEqual({ perChannel: { "chat.update": 60, "chat.appendStream": 120 } });
  });

  it("refuses a naive client's 61st update of one message in a Slack minute, while 60 other channels update at once", async () => {
    // A Slack minute lasts 4 s; twice a Slack second is every 33 ms.
    const speed = 15;
    const emu = await emulator({ rateLimits: { ...SLACK_PER_CHANNEL_LIMITS, speed } });
    const web = client(emu);
    const others = await channelsWithMessages(emu, web, 60);
    const hot = await web.chat.postMessage({ channel: "C1", text: "0" });
    // The naive client edits one message twice a second and never reads Retry-After.
    const results: string[] = [];
    for (let n = 1; n <= 61; n++) {
      results.push(await outcome(web.chat.update({ channel: "C1", ts: hot.ts ?? "", text: String(n) })));
      await sleep(500 / speed);
    }
    expect(results.slice(0, 60).every((r) => r === "ok")).toBe(true);
    expect(retryAfterOf(results[60])).toBeGreaterThanOrEqual(1);
    expect(emu.state.find("C1", hot.ts ?? "")?.text).toBe("60");
    // C1 is at its limit, yet 60 updates in 60 other channels at once all pass: more than
    // the 50 a minute the whole workspace would take in the default mode.
    const spread = await Promise.all(
      others.map((m) => outcome(web.chat.update({ channel: m.channel, ts: m.ts, text: "edited" }))),
    );
    expect(spread).toEqual(others.map(() => "ok"));
    expect(emu.rates.limited.map((l) => [l.method, l.channel])).toEqual([["chat.update", "C1"]]);
  });

  it("takes 120 appends a Slack minute per streamed message's channel, and keeps chat.startStream per workspace", async () => {
    const emu = await emulator({ rateLimits: { ...SLACK_PER_CHANNEL_LIMITS, speed: 15 } });
    const web = client(emu);
    const recipient = { recipient_user_id: "U_ALICE", recipient_team_id: "T1" };
    const roots = await channelsWithMessages(emu, web, 21);
    const [first] = roots;
    const started = await web.chat.startStream({
      channel: first?.channel ?? "",
      thread_ts: first?.ts ?? "",
      ...recipient,
    });
    const append = (n: number) =>
      outcome(
        web.chat.appendStream({
          channel: first?.channel ?? "",
          ts: started.ts ?? "",
          markdown_text: `${n} `,
        }),
      );
    const appends: string[] = [];
    for (let n = 1; n <= 121; n++) appends.push(await append(n));
    expect(appends.slice(0, 120).every((r) => r === "ok")).toBe(true);
    expect(retryAfterOf(appends[120])).toBeGreaterThanOrEqual(1);
    // Tier 2 per workspace: 20 streams a minute in all, however many channels they are in.
    const starts: string[] = [];
    for (const root of roots.slice(1)) {
      starts.push(
        await outcome(web.chat.startStream({ channel: root.channel, thread_ts: root.ts, ...recipient })),
      );
    }
    expect(starts.slice(0, 19).every((r) => r === "ok")).toBe(true);
    expect(retryAfterOf(starts[19])).toBeGreaterThanOrEqual(1);
  });

  it("counts chat.update, chat.delete and the stream methods in the channel each call names", async () => {
    const writes = ["chat.update", "chat.delete", "chat.startStream", "chat.appendStream", "chat.stopStream"];
    const emu = await emulator({ rateLimits: { perChannel: Object.fromEntries(writes.map((m) => [m, 1])) } });
    emu.state.addChannel("C2", "random");
    const web = client(emu);
    const recipient = { recipient_user_id: "U_ALICE", recipient_team_id: "T1" };
    const post = async (channel: string) => (await web.chat.postMessage({ channel, text: "x" })).ts ?? "";
    const c1 = { root: await post("C1"), doomed: [await post("C1"), await post("C1")] };
    const c2 = { root: await post("C2"), doomed: await post("C2") };
    const stream1 = await web.chat.startStream({ channel: "C1", thread_ts: c1.root, ...recipient });
    const results = {
      startStream: [
        await outcome(web.chat.startStream({ channel: "C1", thread_ts: c1.root, ...recipient })),
        await outcome(web.chat.startStream({ channel: "C2", thread_ts: c2.root, ...recipient })),
      ],
      appendStream: [
        await outcome(web.chat.appendStream({ channel: "C1", ts: stream1.ts ?? "", markdown_text: "a" })),
        await outcome(web.chat.appendStream({ channel: "C1", ts: stream1.ts ?? "", markdown_text: "b" })),
      ],
      stopStream: [
        await outcome(web.chat.stopStream({ channel: "C1", ts: stream1.ts ?? "" })),
        await outcome(web.chat.stopStream({ channel: "C1", ts: stream1.ts ?? "" })),
      ],
      update: [
        await outcome(web.chat.update({ channel: "C1", ts: c1.root, text: "u1" })),
        await outcome(web.chat.update({ channel: "C1", ts: c1.root, text: "u2" })),
        await outcome(web.chat.update({ channel: "C2", ts: c2.root, text: "u3" })),
      ],
      delete: [
        await outcome(web.chat.delete({ channel: "C1", ts: c1.doomed[0] ?? "" })),
        await outcome(web.chat.delete({ channel: "C1", ts: c1.doomed[1] ?? "" })),
        await outcome(web.chat.delete({ channel: "C2", ts: c2.doomed })),
      ],
    };
    expect(results).toEqual({
      startStream: ["429 after 60", "ok"],
      appendStream: ["ok", "429 after 60"],
      stopStream: ["ok", "429 after 60"],
      update: ["ok", "429 after 60", "ok"],
      delete: ["ok", "429 after 60", "ok"],
    });
    expect(emu.rates.limited.every((l) => l.channel === "C1")).toBe(true);
  });
});

describe("Slack emulator: per-workspace limits (the default)", () => {
  it("refuses the 51st chat.update in a Slack minute though every update is in another channel", async () => {
    // A Slack minute lasts 6 s.
    const emu = await emulator({ rateLimits: { speed: 10 } });
    const web = client(emu);
    const messages = await channelsWithMessages(emu, web, 51);
    const results: string[] = [];
    for (const m of messages) {
      results.push(await outcome(web.chat.update({ channel: m.channel, ts: m.ts, text: "edited" })));
    }
    expect(results.slice(0, 50).every((r) => r === "ok")).toBe(true);
    const retryAfter = retryAfterOf(results[50]);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(6);
    expect(emu.rates.limited.map((l) => l.method)).toEqual(["chat.update"]);
  });
});

describe("Slack emulator: the tiers of reading a user group and opening a DM", () => {
  it("refuses the 21st usergroups.users.list (Tier 2) and the 51st conversations.open (Tier 3) in a Slack minute", async () => {
    // A Slack minute lasts 6 s.
    const emu = await emulator({ rateLimits: { speed: 10 } });
    const web = client(emu);
    // Per method for the whole workspace: each call names another group, or another person.
    const groups = Array.from({ length: 21 }, (_, i) => `S${100 + i}`);
    for (const g of groups) emu.state.userGroups.set(g, ["U_ALICE"]);
    const people = Array.from({ length: 51 }, (_, i) => emu.state.user(`U_P${i}`).id);
    const lists: string[] = [];
    for (const usergroup of groups) lists.push(await outcome(web.usergroups.users.list({ usergroup })));
    const opens: string[] = [];
    for (const users of people) opens.push(await outcome(web.conversations.open({ users })));
    expect(lists.slice(0, 20).every((r) => r === "ok")).toBe(true);
    expect(retryAfterOf(lists[20])).toBeGreaterThanOrEqual(1);
    expect(opens.slice(0, 50).every((r) => r === "ok")).toBe(true);
    expect(retryAfterOf(opens[50])).toBeGreaterThanOrEqual(1);
    // Raw HTTP, as any client sends it, meets the same wall.
    expect(await rawCall(emu, "usergroups.users.list", { usergroup: "S100" })).toEqual({
      ok: false,
      error: "ratelimited",
    });
    expect(emu.rates.limited.map((l) => l.method)).toEqual([
      "usergroups.users.list",
      "conversations.open",
      "usergroups.users.list",
    ]);
  });
});
