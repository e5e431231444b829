import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { App, LogLevel, SocketModeReceiver } from "@slack/bolt";
import { ErrorCode, WebClient } from "@slack/web-api";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { BOT_USER_ID, SlackEmulator, type SlackEmulatorOptions, waitFor } from "./index.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function emulator(options: SlackEmulatorOptions = {}): Promise<SlackEmulator> {
  const emu = await SlackEmulator.start(options);
  cleanups.push(() => emu.stop());
  return emu;
}

function client(emu: SlackEmulator, token = emu.botToken): WebClient {
  return new WebClient(token, {
    slackApiUrl: emu.apiUrl,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logLevel: LogLevel.ERROR,
  });
}

async function socketApp(emu: SlackEmulator): Promise<App> {
  const receiver = new SocketModeReceiver({
    appToken: emu.appToken,
    logLevel: LogLevel.ERROR,
    // The reconnect delay is this timeout times the failure count; keep it short in tests, but
    // not so short that a late pong from a busy worker drops the connection.
    clientPingTimeout: 1_000,
    installerOptions: { clientOptions: { slackApiUrl: emu.apiUrl } },
  });
  const app = new App({
    token: emu.botToken,
    receiver,
    socketMode: true,
    logLevel: LogLevel.ERROR,
    clientOptions: { slackApiUrl: emu.apiUrl },
  });
  cleanups.push(() => app.stop());
  return app;
}

async function platformError(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    const e = err as { code?: string; data?: { error?: string } };
    return e.code === ErrorCode.PlatformError ? e.data?.error : e.code;
  }
}

describe("Slack emulator: Web API", () => {
  it("answers auth.test with the bot identity and rejects a wrong token with invalid_auth", async () => {
    const emu = await emulator();
    const ok = await client(emu).auth.test();
    expect(ok.user_id).toBe(BOT_USER_ID);
    expect(ok.bot_id).toBe("B_BOT");
    expect(await platformError(client(emu, "xoxb-wrong").auth.test())).toBe("invalid_auth");
  });

  it("refuses unknown channels and over-long messages like Slack", async () => {
    const emu = await emulator();
    const web = client(emu);
    expect(await platformError(web.chat.postMessage({ channel: "C404", text: "hi" }))).toBe(
      "channel_not_found",
    );
    expect(await platformError(web.chat.postMessage({ channel: "C1", text: "x".repeat(40_001) }))).toBe(
      "msg_too_long",
    );
    const posted = await web.chat.postMessage({ channel: "C1", text: "short" });
    const ts = posted.ts ?? "";
    expect(await platformError(web.chat.update({ channel: "C1", ts, text: "y".repeat(4_001) }))).toBe(
      "msg_too_long",
    );
    await web.chat.update({ channel: "C1", ts, text: "edited" });
    const m = emu.state.find("C1", ts);
    expect(m?.text).toBe("edited");
    expect(m?.edits.map((e) => e.text)).toEqual(["short"]);
  });

  it("answers 429 with Retry-After once chat.update passes its per-workspace limit", async () => {
    const emu = await emulator({ rateLimits: { perMinute: { "chat.update": 3 } } });
    const web = client(emu);
    const posted = await web.chat.postMessage({ channel: "C1", text: "0" });
    const ts = posted.ts ?? "";
    for (const n of [1, 2, 3]) await web.chat.update({ channel: "C1", ts, text: String(n) });
    const err = await web.chat.update({ channel: "C1", ts, text: "4" }).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe(ErrorCode.RateLimitedError);
    expect((err as { retryAfter?: number }).retryAfter).toBeGreaterThanOrEqual(1);
    expect(emu.state.find("C1", ts)?.text).toBe("3");
  });

  it("can answer every second message write with a 429", async () => {
    const emu = await emulator({ rateLimits: { failEveryNthWrite: 2 } });
    const web = client(emu);
    const results: string[] = [];
    for (let i = 0; i < 4; i++) {
      results.push(
        await web.chat.postMessage({ channel: "C1", text: `m${i}` }).then(
          () => "ok",
          (e: { code?: string }) => e.code ?? "error",
        ),
      );
    }
    expect(results).toEqual(["ok", ErrorCode.RateLimitedError, "ok", ErrorCode.RateLimitedError]);
    expect(emu.state.history("C1").map((m) => m.text)).toEqual(["m0", "m2"]);
  });

  it("stores files uploaded with filesUploadV2 in the thread, with title and bytes", async () => {
    const emu = await emulator();
    const web = client(emu);
    const root = await web.chat.postMessage({ channel: "C1", text: "root" });
    const bytes = Buffer.from("hello file");
    await web.filesUploadV2({
      channel_id: "C1",
      thread_ts: root.ts ?? "",
      file: bytes,
      filename: "hello.txt",
      title: "Greeting",
    });
    const replies = emu.threadMessages("C1", root.ts ?? "");
    const file = replies[1]?.files[0];
    expect(file?.title).toBe("Greeting");
    expect(Buffer.from(file?.bytes ?? []).toString()).toBe("hello file");
  });

  it("streams with chat.startStream/appendStream/stopStream and refuses appends after the stop", async () => {
    const emu = await emulator();
    const web = client(emu);
    const root = await web.chat.postMessage({ channel: "C1", text: "root" });
    const streamer = web.chatStream({
      channel: "C1",
      thread_ts: root.ts ?? "",
      recipient_team_id: "T1",
      recipient_user_id: "U_ALICE",
      buffer_size: 4,
    });
    await streamer.append({ markdown_text: "Hello, " });
    await streamer.append({ markdown_text: "**world**" });
    await streamer.stop();
    const reply = emu.botReplies("C1", root.ts ?? "")[0];
    expect(reply?.text).toBe("Hello, **world**");
    expect(reply?.stream?.state).toBe("stopped");
    const again = web.chat.appendStream({ channel: "C1", ts: reply?.ts ?? "", markdown_text: "!" });
    expect(await platformError(again)).toBe("message_not_in_streaming_state");
  });

  it("holds streams to Slack's rules: recipients in channels, a lifetime, a size limit, valid chunks", async () => {
    const emu = await emulator({ limits: { streamLifetimeMs: 300, markdownChars: 20 } });
    const web = client(emu);
    const root = await web.chat.postMessage({ channel: "C1", text: "root" });
    const thread_ts = root.ts ?? "";
    expect(await platformError(web.chat.startStream({ channel: "C1", thread_ts }))).toBe(
      "missing_recipient_user_id",
    );
    const recipient = { recipient_user_id: "U_ALICE", recipient_team_id: "T1" };
    const bad = web.chat.startStream({
      channel: "C1",
      thread_ts,
      ...recipient,
      chunks: [{ type: "confetti" } as never],
    });
    expect(await platformError(bad)).toBe("invalid_chunks");
    const started = await web.chat.startStream({ channel: "C1", thread_ts, ...recipient });
    const ts = started.ts ?? "";
    const append = (text: string) =>
      web.chat.appendStream({ channel: "C1", ts, chunks: [{ type: "markdown_text", text }] });
    await append("0123456789");
    expect(await platformError(append("0123456789A"))).toBe("msg_too_long");
    expect(await platformError(web.chat.update({ channel: "C1", ts, text: "edit" }))).toBe(
      "cant_update_message",
    );
    await new Promise((r) => setTimeout(r, 350));
    expect(await platformError(append("late"))).toBe("message_not_in_streaming_state");
    expect(emu.botReplies("C1", thread_ts).map((m) => [m.text, m.stream?.state])).toEqual([
      ["0123456789", "expired"],
    ]);
    // Appending to a message that never streamed is refused the same way.
    const plain = await web.chat.postMessage({ channel: "C1", thread_ts, text: "plain" });
    const onPlain = web.chat.appendStream({ channel: "C1", ts: plain.ts ?? "", markdown_text: "x" });
    expect(await platformError(onPlain)).toBe("message_not_in_streaming_state");
  });

  it("can refuse a method, as a workspace that does not allow it would", async () => {
    const emu = await emulator();
    emu.state.dmChannel("U_ALICE");
    const web = client(emu);
    const root = await web.chat.postMessage({ channel: "DALICE", text: "root" });
    emu.api.refuse("chat.startStream", "not_allowed_token_type", 1);
    const start = () => web.chat.startStream({ channel: "DALICE", thread_ts: root.ts ?? "" });
    expect(await platformError(start())).toBe("not_allowed_token_type");
    // A DM needs no recipient; the refusal was for one call only.
    expect((await start()).ok).toBe(true);
  });

  it("returns thread history with conversations.replies and user names with users.info", async () => {
    const emu = await emulator();
    const root = emu.post("C1", "U_ALICE", "first");
    emu.post("C1", "U_BOB", "second", { threadTs: root.ts });
    const web = client(emu);
    const replies = await web.conversations.replies({ channel: "C1", ts: root.ts, limit: 1 });
    expect(replies.messages?.map((m) => m.text)).toEqual(["first"]);
    const next = await web.conversations.replies({
      channel: "C1",
      ts: root.ts,
      cursor: replies.response_metadata?.next_cursor,
    });
    expect(next.messages?.map((m) => m.text)).toEqual(["second"]);
    const info = await web.users.info({ user: "U_BOB" });
    expect(info.user?.real_name).toBe("Bob");
  });
});

describe("Slack emulator: message metadata", () => {
  it("keeps a message's metadata and returns it only to a read that asks with include_all_metadata", async () => {
    const emu = await emulator();
    const root = emu.post("C1", "U_ALICE", "question");
    const web = client(emu);
    const metadata = { event_type: "switchboard_reply", event_payload: { key: "k1" } };
    const posted = await web.chat.postMessage({
      channel: "C1",
      thread_ts: root.ts,
      text: "answer",
      metadata,
    });
    const plain = await web.conversations.replies({ channel: "C1", ts: root.ts });
    expect(plain.messages?.find((m) => m.ts === posted.ts)?.metadata).toBeUndefined();
    const full = await web.conversations.replies({ channel: "C1", ts: root.ts, include_all_metadata: true });
    expect(full.messages?.find((m) => m.ts === posted.ts)?.metadata).toEqual(metadata);
  });

  it("refuses malformed metadata from a naive client, posting nothing", async () => {
    const emu = await emulator();
    const root = emu.post("C1", "U_ALICE", "question");
    const post = async (metadata: string) => {
      const body = new URLSearchParams({ channel: "C1", thread_ts: root.ts, text: "x", metadata });
      const res = await fetch(`${emu.apiUrl}chat.postMessage`, {
        method: "POST",
        headers: { authorization: `Bearer ${emu.botToken}` },
        body,
      });
      return ((await res.json()) as { error?: string }).error;
    };
    expect(await post("not json")).toBe("invalid_metadata_format");
    expect(await post(JSON.stringify({ event_payload: { key: "k" } }))).toBe("invalid_metadata_schema");
    expect(await post(JSON.stringify({ event_type: "t", event_payload: ["k"] }))).toBe(
      "invalid_metadata_schema",
    );
    expect(emu.botReplies("C1", root.ts)).toEqual([]);
  });

  it("holds feedback buttons and markdown blocks to Block Kit's rules, against a naive client", async () => {
    const emu = await emulator();
    let n = 0;
    // A channel each: the per-channel post rate is not what this is about.
    const post = async (blocks: unknown[]) => {
      const channel = `CB${n++}`;
      emu.state.addChannel(channel, channel.toLowerCase());
      const body = new URLSearchParams({ channel, text: "x", blocks: JSON.stringify(blocks) });
      const res = await fetch(`${emu.apiUrl}chat.postMessage`, {
        method: "POST",
        headers: { authorization: `Bearer ${emu.botToken}` },
        body,
      });
      return ((await res.json()) as { ok: boolean; error?: string }).error ?? "ok";
    };
    const button = (value: string) => ({ text: { type: "plain_text", text: "👍" }, value });
    const feedback = {
      type: "feedback_buttons",
      action_id: "f",
      positive_button: button("good"),
      negative_button: button("bad"),
    };
    expect(await post([{ type: "context_actions", elements: [feedback] }])).toBe("ok");
    // Feedback buttons live in a context_actions block only.
    expect(await post([{ type: "actions", elements: [feedback] }])).toBe("invalid_blocks");
    expect(
      await post([{ type: "context_actions", elements: [{ ...feedback, negative_button: undefined }] }]),
    ).toBe("invalid_blocks");
    expect(
      await post([
        { type: "context_actions", elements: [{ ...feedback, positive_button: { text: "👍", value: "g" } }] },
      ]),
    ).toBe("invalid_blocks");
    expect(await post([{ type: "context_actions", elements: [] }])).toBe("invalid_blocks");
    expect(await post([{ type: "markdown", text: "x".repeat(12_001) }])).toBe("invalid_blocks");
    expect(emu.state.messages.filter((m) => m.channel.startsWith("CB"))).toHaveLength(1);
  });
});

describe("Slack emulator: Socket Mode with a real Bolt app", () => {
  it("delivers a mention as app_mention and the app's say() lands in the thread", async () => {
    const emu = await emulator();
    const app = await socketApp(emu);
    app.event("app_mention", async ({ event, say }) => {
      await say({ text: `echo: ${event.text}`, thread_ts: event.ts });
    });
    await app.start();
    const m = emu.mention("C1", "U_ALICE", "hello");
    const replies = await waitFor(() => emu.botReplies("C1", m.ts).length > 0 && emu.botReplies("C1", m.ts));
    expect(replies[0]?.text).toBe(`echo: <@${BOT_USER_ID}> hello`);
  });

  it("redelivers an envelope that was not acked, with retry_attempt and retry_reason", async () => {
    const emu = await emulator({ ackTimeoutMs: 100, maxRetries: 2 });
    const opened = await client(emu, emu.appToken).apps.connections.open({});
    const ws = new WebSocket(opened.url ?? "");
    cleanups.push(() => ws.close());
    const frames: Record<string, unknown>[] = [];
    ws.on("message", (d) => frames.push(JSON.parse(d.toString()) as Record<string, unknown>));
    await waitFor(() => frames.some((f) => f.type === "hello"));
    emu.dm("U_ALICE", "anyone there?");
    const envelopes = await waitFor(() => {
      const got = frames.filter((f) => f.type === "events_api");
      return got.length === 3 && got;
    });
    expect(envelopes.map((e) => e.retry_attempt)).toEqual([0, 1, 2]);
    expect(envelopes.map((e) => e.retry_reason)).toEqual(["", "timeout", "timeout"]);
    const eventIds = envelopes.map((e) => (e.payload as { event_id: string }).event_id);
    expect(new Set(eventIds).size).toBe(1);
  });

  it("stops redelivering once the envelope is acked", async () => {
    const emu = await emulator({ ackTimeoutMs: 100 });
    const app = await socketApp(emu);
    const seen: string[] = [];
    app.message(async ({ message }) => {
      if ("text" in message) seen.push(message.text ?? "");
    });
    await app.start();
    emu.dm("U_ALICE", "once");
    const [delivery] = emu.delivery.deliveries.slice(-1);
    await delivery?.done;
    expect(delivery?.envelopeIds).toHaveLength(1);
    expect(seen).toEqual(["once"]);
  });

  it("delivers the same event several times when asked", async () => {
    const emu = await emulator();
    const app = await socketApp(emu);
    const ids: string[] = [];
    app.event("app_mention", async ({ body }) => {
      ids.push(body.event_id);
    });
    await app.start();
    emu.mention("C1", "U_ALICE", "dup", { times: 3 });
    await waitFor(() => ids.length === 3);
    expect(new Set(ids).size).toBe(1);
  });

  it("makes Bolt reconnect with a disconnect message and keeps delivering events", async () => {
    const emu = await emulator();
    const app = await socketApp(emu);
    const texts: string[] = [];
    app.message(async ({ message }) => {
      if ("text" in message && !("bot_id" in message && message.bot_id)) texts.push(message.text ?? "");
    });
    await app.start();
    emu.disconnect("refresh_requested");
    await waitFor(() => emu.delivery.connections === 2 && emu.delivery.sockets.size === 1);
    emu.dm("U_ALICE", "after reconnect");
    await waitFor(() => texts.includes("after reconnect"));
  });

  it("hands a slash command to Bolt and records the ack and the response_url answer", async () => {
    const emu = await emulator();
    const app = await socketApp(emu);
    app.command("/switchboard", async ({ ack, respond, command }) => {
      await ack({ text: `working on ${command.text}` });
      await respond({ text: "done", response_type: "ephemeral" });
    });
    await app.start();
    const handle = emu.slash("/switchboard", "help", "U_ALICE", "C1");
    expect(await handle.ack).toMatchObject({ text: "working on help" });
    await waitFor(() => emu.state.ephemerals.some((e) => e.via === "response_url"));
    expect(emu.state.ephemerals.map((e) => [e.via, e.text])).toEqual([
      ["ack", "working on help"],
      ["response_url", "done"],
    ]);
  });
});

describe("Slack emulator: HTTP mode", () => {
  it("signs event requests so Bolt's HTTPReceiver accepts them, and rejects a wrong secret", async () => {
    const emu = await emulator({ ackTimeoutMs: 200, maxRetries: 0 });
    const mentions: string[] = [];
    const start = async (secret: string) => {
      const app = new App({
        token: emu.botToken,
        signingSecret: secret,
        logLevel: LogLevel.ERROR,
        clientOptions: { slackApiUrl: emu.apiUrl },
      });
      app.event("app_mention", async ({ event }) => {
        mentions.push(event.text);
      });
      const server = (await app.start({ port: 0, host: "127.0.0.1" })) as Server;
      cleanups.push(() => app.stop());
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
    };
    emu.useHttp(await start(emu.signingSecret));
    emu.mention("C1", "U_ALICE", "over http");
    await waitFor(() => mentions.length === 1);
    emu.useHttp(await start("another-secret"));
    emu.mention("C1", "U_ALICE", "forged");
    const last = emu.delivery.deliveries.at(-1);
    expect(await last?.done).toBeUndefined();
    expect(last?.acked).toBe(false);
    expect(mentions).toEqual([`<@${BOT_USER_ID}> over http`]);
  });
});

describe("Slack emulator: as strict as Slack", () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("takes a short burst of chat.postMessage per channel, then about one a second, answering 429 with Retry-After", async () => {
    const emu = await emulator();
    emu.state.addChannel("C2", "random");
    // A naive client: posts as fast as it can and neither waits nor retries.
    const web = client(emu);
    const post = (channel: string, text: string) =>
      web.chat.postMessage({ channel, text }).then(
        () => "ok",
        (e: { code?: string; retryAfter?: number }) =>
          e.code === ErrorCode.RateLimitedError ? `429 retry-after ${e.retryAfter}` : String(e.code),
      );
    const results: string[] = [];
    for (let i = 0; i < 6; i++) results.push(await post("C1", `m${i}`));
    expect(results).toEqual([
      "ok",
      "ok",
      "ok",
      "429 retry-after 1",
      "429 retry-after 1",
      "429 retry-after 1",
    ]);
    expect(emu.state.history("C1").map((m) => m.text)).toEqual(["m0", "m1", "m2"]);
    // The limit is per channel: another channel still takes a post at once.
    expect(await post("C2", "elsewhere")).toBe("ok");
    // Waiting out Retry-After earns one more message, not another burst.
    await sleep(1_050);
    expect([await post("C1", "after"), await post("C1", "again")]).toEqual(["ok", "429 retry-after 1"]);
    expect(emu.rates.limited.filter((l) => l.method === "chat.postMessage" && !l.forced)).toHaveLength(4);
  });

  it("keeps the per-channel burst and rate configurable, and runs them faster with speed", async () => {
    const emu = await emulator({
      rateLimits: { postMessageBurst: 1, perMinute: { "chat.postMessage": 60 }, speed: 10 },
    });
    const web = client(emu);
    await web.chat.postMessage({ channel: "C1", text: "one" });
    const err = await web.chat.postMessage({ channel: "C1", text: "two" }).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe(ErrorCode.RateLimitedError);
    // Ten Slack seconds a second: a token is back after 100 ms.
    await sleep(120);
    await web.chat.postMessage({ channel: "C1", text: "three" });
    expect(emu.state.history("C1").map((m) => m.text)).toEqual(["one", "three"]);
  });

  it("fails a slash command whose Socket Mode ack comes after the deadline, and ignores the late ack", async () => {
    const emu = await emulator({ ackTimeoutMs: 300 });
    const app = await socketApp(emu);
    // A naive listener: does its work first and acks afterwards.
    app.command("/switchboard", async ({ ack }) => {
      await sleep(500);
      await ack({ text: "here is your answer" });
    });
    await app.start();
    const handle = emu.slash("/switchboard", "slow", "U_ALICE", "C1");
    expect(await handle.ack).toBeUndefined();
    expect(handle.delivery.failed).toBe("operation_timeout");
    await waitFor(() => handle.delivery.lateAcks.length === 1);
    expect(handle.delivery.lateAcks[0]?.payload).toMatchObject({ text: "here is your answer" });
    expect(handle.delivery.acked).toBe(false);
    // Not redelivered, and the user saw Slack's error instead of the answer.
    expect(handle.delivery.envelopeIds).toHaveLength(1);
    expect(emu.state.ephemerals.map((e) => [e.via, e.text])).toEqual([
      ["slack", '/switchboard failed with the error "operation_timeout"'],
    ]);
  });

  it("fails a slash command whose HTTP response comes after the deadline, and ignores the late response", async () => {
    const emu = await emulator({ ackTimeoutMs: 300 });
    const app = new App({
      token: emu.botToken,
      signingSecret: emu.signingSecret,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: emu.apiUrl },
    });
    app.command("/switchboard", async ({ ack }) => {
      await sleep(500);
      await ack({ text: "here is your answer" });
    });
    const server = (await app.start({ port: 0, host: "127.0.0.1" })) as Server;
    cleanups.push(() => app.stop());
    emu.useHttp(`http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`);
    const handle = emu.slash("/switchboard", "slow", "U_ALICE", "C1");
    expect(await handle.ack).toBeUndefined();
    expect(handle.delivery.failed).toBe("operation_timeout");
    await waitFor(() => handle.delivery.lateAcks.length === 1);
    expect(handle.delivery.lateAcks[0]?.payload).toMatchObject({ text: "here is your answer" });
    expect(handle.delivery.envelopeIds).toHaveLength(1);
    expect(emu.state.ephemerals.map((e) => e.via)).toEqual(["slack"]);
  });
});
