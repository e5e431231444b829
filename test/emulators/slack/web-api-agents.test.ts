import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "./index.js";
import { rawCall } from "./raw-call.js";
import { sessionKey } from "./web-api-agents.js";

let emu: SlackEmulator | undefined;
afterEach(async () => {
  await emu?.stop();
  emu = undefined;
});

const call = (e: SlackEmulator, method: string, args: Record<string, string>) =>
  rawCall<{ status?: string }>(e, method, args);

describe("Slack emulator: agents.sessions.setStatus", () => {
  it("refuses to start a session for an initiator who is another app's bot, and only that session", async () => {
    emu = await SlackEmulator.start();
    const bot = emu.botPost("C1", "a webhook's report");
    const person = emu.post("C1", "U_ALICE", "a question");
    const start = (threadTs: string, initiator: string) =>
      call(emu!, "agents.sessions.setStatus", {
        channel_id: "C1",
        thread_ts: threadTs,
        status: "processing",
        initiator_user_id: initiator,
      });
    expect(await start(bot.ts, "U_OTHERBOT")).toEqual({ ok: false, error: "user_not_in_channel" });
    expect(await start(bot.ts, "B_OTHER")).toEqual({ ok: false, error: "user_not_in_channel" });
    expect(emu.api.sessions.size).toBe(0);
    expect(await start(person.ts, "U_ALICE")).toMatchObject({ ok: true, status: "processing" });
    // The initiator counts only when the session is made: moving it on names nobody.
    const done = await call(emu, "agents.sessions.setStatus", {
      channel_id: "C1",
      thread_ts: person.ts,
      status: "active",
    });
    expect(done).toMatchObject({ ok: true, status: "active" });
  });

  it("refuses a session in a thread that does not exist, or in an unknown channel", async () => {
    emu = await SlackEmulator.start();
    const args = { status: "processing", initiator_user_id: "U_ALICE" };
    expect(
      await call(emu, "agents.sessions.setStatus", { ...args, channel_id: "C1", thread_ts: "1.000001" }),
    ).toEqual({ ok: false, error: "thread_not_found" });
    expect(
      await call(emu, "agents.sessions.setStatus", { ...args, channel_id: "C9", thread_ts: "1.000001" }),
    ).toEqual({ ok: false, error: "channel_not_found" });
  });
});

describe("Slack emulator: Slack's stop button on an agent session", () => {
  it("is there only while the session is processing", async () => {
    emu = await SlackEmulator.start();
    const m = emu.post("C1", "U_ALICE", "a question");
    const setStatus = (status: string) =>
      call(emu!, "agents.sessions.setStatus", { channel_id: "C1", thread_ts: m.ts, status });
    expect(() => emu!.stopAgentSession("U_ALICE", "C1", m.ts)).toThrow("is none");
    await setStatus("processing");
    expect(emu.stopAgentSession("U_ALICE", "C1", m.ts)).toHaveLength(1);
    const stopped = emu.delivery.deliveries.at(-1)?.payload.event;
    expect(stopped).toMatchObject({ type: "agent_session_stopped", user: "U_ALICE", thread_ts: m.ts });
    for (const status of ["active", "suspended", "closed"]) {
      await setStatus(status);
      expect(() => emu!.stopAgentSession("U_ALICE", "C1", m.ts)).toThrow(`is ${status}`);
    }
  });

  it("stops the app's streams at a press but leaves the session processing, button and all, until the app moves it on", async () => {
    emu = await SlackEmulator.start();
    const m = emu.post("C1", "U_ALICE", "a question");
    await call(emu, "agents.sessions.setStatus", { channel_id: "C1", thread_ts: m.ts, status: "processing" });
    const stream = await rawCall<{ ts: string }>(emu, "chat.startStream", {
      channel: "C1",
      thread_ts: m.ts,
      recipient_user_id: "U_ALICE",
      recipient_team_id: "T1",
      markdown_text: "Working on it",
    });
    expect(stream.ok).toBe(true);

    emu.stopAgentSession("U_BOB", "C1", m.ts);
    expect(emu.delivery.deliveries.at(-1)?.payload.event).toMatchObject({
      user: "U_BOB",
      streaming_message_ts: [stream.ts],
    });
    expect(
      await rawCall(emu, "chat.appendStream", { channel: "C1", ts: stream.ts, markdown_text: "…" }),
    ).toEqual({
      ok: false,
      error: "message_not_in_streaming_state",
    });
    expect(emu.api.sessions.get(sessionKey("C1", m.ts))?.status).toBe("processing");
    // Nothing streams now, and the button is still there for the next press.
    emu.stopAgentSession("U_ALICE", "C1", m.ts);
    expect(emu.delivery.deliveries.at(-1)?.payload.event).toMatchObject({
      user: "U_ALICE",
      streaming_message_ts: [],
    });
  });
});

describe("Slack emulator: an agent app's Messages tab", () => {
  it("tells the app a person opened it, and takes suggested prompts for the DM without a thread", async () => {
    emu = await SlackEmulator.start();
    const dm = emu.openMessagesTab("U_ALICE");
    const opened = emu.delivery.deliveries.map((d) => d.payload.event).at(-1);
    expect(opened).toMatchObject({ type: "app_home_opened", user: "U_ALICE", channel: dm, tab: "messages" });
    const prompts = JSON.stringify([{ title: "Hi", message: "Say hi" }]);
    expect(await call(emu, "assistant.threads.setSuggestedPrompts", { channel_id: dm, prompts })).toEqual({
      ok: true,
    });
    expect(emu.state.tabPrompts.get(dm)).toEqual([{ prompts: [{ title: "Hi", message: "Say hi" }] }]);
    // A channel's prompts need a thread; and one to four prompts, as ever.
    expect(await call(emu, "assistant.threads.setSuggestedPrompts", { channel_id: "C1", prompts })).toEqual({
      ok: false,
      error: "invalid_arguments",
    });
    expect(
      await call(emu, "assistant.threads.setSuggestedPrompts", { channel_id: dm, prompts: "[]" }),
    ).toEqual({ ok: false, error: "invalid_arguments" });
  });
});
