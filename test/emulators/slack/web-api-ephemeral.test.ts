import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "./index.js";
import { rawCall } from "./raw-call.js";

let emu: SlackEmulator | undefined;
afterEach(async () => {
  await emu?.stop();
  emu = undefined;
});

const ephemeral = (e: SlackEmulator, args: Record<string, string>) =>
  rawCall(e, "chat.postEphemeral", { channel: "C1", user: "U_ALICE", text: "Only for you.", ...args });

describe("Slack emulator: where an ephemeral message shows", () => {
  it("answers ok for one under a message nobody has replied to, and shows it nowhere, as Slack does", async () => {
    emu = await SlackEmulator.start();
    const lonely = emu.post("C1", "U_ALICE", "a question nobody answered");
    expect(await ephemeral(emu, { thread_ts: lonely.ts })).toMatchObject({ ok: true });
    expect(emu.state.ephemerals.map((e) => [e.thread_ts, e.shown])).toEqual([[lonely.ts, false]]);
  });

  it("shows one in the channel, and one in a thread that has a reply, named by its root or by a reply", async () => {
    emu = await SlackEmulator.start();
    const root = emu.post("C1", "U_ALICE", "a question");
    const reply = emu.post("C1", "U_BOB", "an answer", { threadTs: root.ts });
    await ephemeral(emu, {});
    await ephemeral(emu, { thread_ts: root.ts });
    await ephemeral(emu, { thread_ts: reply.ts });
    expect(emu.state.ephemerals.map((e) => e.shown)).toEqual([true, true, true]);
  });

  it("shows one under a thread once the bot has replied in it", async () => {
    emu = await SlackEmulator.start();
    const root = emu.post("C1", "U_ALICE", "a question");
    await ephemeral(emu, { thread_ts: root.ts });
    await rawCall(emu, "chat.postMessage", { channel: "C1", thread_ts: root.ts, text: "On it." });
    await ephemeral(emu, { thread_ts: root.ts });
    expect(emu.state.ephemerals.map((e) => e.shown)).toEqual([false, true]);
  });
});

describe("Slack emulator: an archived channel", () => {
  it("refuses updates, streamed text and reactions there (is_archived), and changes nothing", async () => {
    emu = await SlackEmulator.start();
    emu.state.addChannel("C5", "project");
    const root = emu.post("C5", "U_ALICE", "a question");
    const posted = await rawCall<{ ts: string }>(emu, "chat.postMessage", {
      channel: "C5",
      thread_ts: root.ts,
      text: "Working on it",
    });
    const stream = await rawCall<{ ts: string }>(emu, "chat.startStream", {
      channel: "C5",
      thread_ts: root.ts,
      markdown_text: "Streaming",
      recipient_user_id: "U_ALICE",
      recipient_team_id: "T1",
    });
    emu.state.channels.get("C5")!.archived = true;
    const refused = async (method: string, args: Record<string, string>) =>
      (await rawCall(emu!, method, { channel: "C5", ...args })).error;
    expect({
      update: await refused("chat.update", { ts: posted.ts, text: "Done" }),
      append: await refused("chat.appendStream", { ts: stream.ts, markdown_text: " more" }),
      stop: await refused("chat.stopStream", { ts: stream.ts }),
      start: await refused("chat.startStream", {
        thread_ts: root.ts,
        markdown_text: "Again",
        recipient_user_id: "U_ALICE",
        recipient_team_id: "T1",
      }),
      react: await refused("reactions.add", { timestamp: root.ts, name: "eyes" }),
    }).toEqual({
      update: "is_archived",
      append: "is_archived",
      stop: "is_archived",
      start: "is_archived",
      react: "is_archived",
    });
    expect(emu.botReplies("C5", root.ts).map((m) => m.text)).toEqual(["Working on it", "Streaming"]);
    expect(emu.state.find("C5", root.ts)?.reactions.size).toBe(0);
  });
});
