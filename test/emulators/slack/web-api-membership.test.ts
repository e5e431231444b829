import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "./index.js";
import { rawCall } from "./raw-call.js";

let emu: SlackEmulator | undefined;
afterEach(async () => {
  await emu?.stop();
  emu = undefined;
});

describe("Slack emulator: channel membership", () => {
  it("refuses the bot's posts where it was not invited: not_in_channel in a public channel, channel_not_found in a private one", async () => {
    emu = await SlackEmulator.start();
    emu.state.addChannel("C2", "random", { botMember: false });
    emu.state.addChannel("G2", "secret", { botMember: false });
    const post = (channel: string) => rawCall(emu!, "chat.postMessage", { channel, text: "Hello." });
    expect(await post("C2")).toMatchObject({ ok: false, error: "not_in_channel" });
    expect(await post("G2")).toMatchObject({ ok: false, error: "channel_not_found" });
    expect(
      await rawCall(emu, "chat.startStream", {
        channel: "C2",
        thread_ts: emu.post("C2", "U_ALICE", "a question").ts,
        markdown_text: "Hi",
        recipient_user_id: "U_ALICE",
        recipient_team_id: "T1",
      }),
    ).toMatchObject({ ok: false, error: "not_in_channel" });
    expect(
      await rawCall(emu, "chat.postEphemeral", { channel: "C2", user: "U_ALICE", text: "Only for you." }),
    ).toMatchObject({ ok: false, error: "not_in_channel" });
    expect(emu.state.history("C2").filter((m) => m.user === "U_BOT")).toEqual([]);

    // Invited (`/invite @Switchboard`), it may.
    emu.state.channels.get("C2")!.botMember = true;
    expect(await post("C2")).toMatchObject({ ok: true });
    // The channels tests use have the bot, and DMs (assistant threads among them) always do.
    expect(await post("C1")).toMatchObject({ ok: true });
    const { channel, threadTs } = emu.startAssistantThread("U_ALICE");
    expect(
      await rawCall(emu, "chat.postMessage", { channel, thread_ts: threadTs, text: "In the pane." }),
    ).toMatchObject({ ok: true });
  });

  it("refuses the bot's posts in a DM between other people (channel_not_found) and in an archived channel (is_archived)", async () => {
    emu = await SlackEmulator.start();
    emu.state.addChannel("D0AB", "D0AB", { botMember: false, members: ["U_ALICE", "U_BOB"] });
    emu.state.addChannel("C4", "old-project", { archived: true });
    const post = (channel: string) => rawCall(emu!, "chat.postMessage", { channel, text: "Hello." });
    expect(await post("D0AB")).toMatchObject({ ok: false, error: "channel_not_found" });
    expect(await post("C4")).toMatchObject({ ok: false, error: "is_archived" });
    expect(
      await rawCall(emu, "chat.postEphemeral", { channel: "C4", user: "U_ALICE", text: "Only for you." }),
    ).toMatchObject({ ok: false, error: "is_archived" });
    expect(emu.state.messages.filter((m) => m.user === "U_BOT")).toEqual([]);
    // The bot's own DM with a person stays open to it.
    expect(await post(emu.state.dmChannel("U_ALICE").id)).toMatchObject({ ok: true });
  });

  it("refuses an ephemeral message to someone who is not in the channel (user_not_in_channel)", async () => {
    emu = await SlackEmulator.start();
    emu.state.addChannel("C3", "team", { members: ["U_ALICE"] });
    const ephemeral = (channel: string, user: string) =>
      rawCall(emu!, "chat.postEphemeral", { channel, user, text: "Only for you." });
    expect(await ephemeral("C3", "U_ALICE")).toMatchObject({ ok: true });
    expect(await ephemeral("C3", "U_CAROL")).toMatchObject({ ok: false, error: "user_not_in_channel" });
    // A DM holds its person alone.
    const dm = emu.state.dmChannel("U_ALICE").id;
    expect(await ephemeral(dm, "U_CAROL")).toMatchObject({ ok: false, error: "user_not_in_channel" });
    expect(emu.state.ephemerals.map((e) => [e.channel, e.user])).toEqual([["C3", "U_ALICE"]]);
  });

  it("opens the DM with one person (conversations.open), where the bot may always post", async () => {
    emu = await SlackEmulator.start();
    emu.state.user("U_CAROL");
    const opened = await rawCall<{ channel: { id: string } }>(emu, "conversations.open", {
      users: "U_CAROL",
    });
    expect(opened).toMatchObject({ ok: true, channel: { id: emu.state.dmChannel("U_CAROL").id } });
    expect(await rawCall(emu, "conversations.open", { users: "U_NOBODY" })).toMatchObject({
      ok: false,
      error: "user_not_found",
    });
    expect(
      await rawCall(emu, "chat.postMessage", { channel: opened.channel.id, text: "Just for you." }),
    ).toMatchObject({ ok: true });
  });
});
