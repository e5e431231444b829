import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../../../test/emulators/slack/adapter-harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const SIGN_IN =
  "Sign in to mine with your own account (this link is yours alone and works once): https://auth.example/x";

/** A thread in #team, where only alice and bob are, and the reply of a turn `asker` started. */
async function threadInTeam(asker: string) {
  h = await startHarness();
  h.emu.state.addChannel("C3", "team", { members: ["U_ALICE", "U_BOB"] });
  const root = h.emu.post("C3", "U_ALICE", "a question");
  const reply = h.adapter.replyFor?.(`slack:T1:C3:${root.ts}`, { messages: [], asker });
  if (!reply) throw new Error("the Slack adapter rebuilds no replies");
  return { root, reply, harness: h };
}

describe("Slack adapter: a notice for one person", () => {
  it("goes to their direct messages when Slack refuses it as an ephemeral, never to the thread", async () => {
    const { root, reply, harness } = await threadInTeam("U_CAROL");
    harness.emu.state.user("U_CAROL");
    await reply.notice("You are not allowed to approve this.");
    const calls = harness.emu.api.calls
      .filter((c) => c.method.startsWith("chat.") || c.method.startsWith("conversations."))
      .map((c) => [c.method, c.error ?? "ok"]);
    expect(calls).toEqual([
      ["chat.postEphemeral", "user_not_in_channel"],
      ["conversations.open", "ok"],
      ["chat.postMessage", "ok"],
    ]);
    expect(harness.emu.botReplies("C3", root.ts)).toEqual([]);
    const dm = harness.emu.state.history(harness.emu.state.dmChannel("U_CAROL").id);
    expect(dm.map((m) => m.text)).toEqual([
      "I could not show you this in <#C3>, so here it is.\nYou are not allowed to approve this.",
    ]);
  });

  it("opens the direct message with a person once for two notices that go there", async () => {
    const { reply, harness } = await threadInTeam("U_CAROL");
    harness.emu.state.user("U_CAROL");
    await reply.notice("First.");
    await reply.notice("Second.");
    expect(harness.emu.api.calls.filter((c) => c.method === "conversations.open")).toHaveLength(1);
    const dm = harness.emu.state.history(harness.emu.state.dmChannel("U_CAROL").id);
    expect(dm.map((m) => m.text.split("\n").at(-1))).toEqual(["First.", "Second."]);
  });

  it("is dropped, not posted in the thread, when neither an ephemeral nor a direct message reaches them", async () => {
    const { root, reply, harness } = await threadInTeam("U_CAROL");
    harness.emu.state.user("U_CAROL");
    harness.emu.api.refuse("conversations.open", "cannot_dm_bot");
    await reply.notice(SIGN_IN);
    expect(harness.emu.botReplies("C3", root.ts)).toEqual([]);
    expect(harness.emu.state.messages.filter((m) => m.text.includes("https://auth.example"))).toEqual([]);
    expect(harness.emu.api.calls.filter((c) => c.method === "chat.postMessage")).toEqual([]);
  });

  it("is shown to its person alone where they are in the channel, and to the thread only when nobody is known", async () => {
    const { root, reply, harness } = await threadInTeam("U_BOB");
    await reply.notice(SIGN_IN);
    expect(harness.emu.state.ephemerals.map((e) => [e.channel, e.user])).toEqual([["C3", "U_BOB"]]);
    expect(harness.emu.botReplies("C3", root.ts)).toEqual([]);
    await harness.adapter.replyFor?.(`slack:T1:C3:${root.ts}`, { messages: [] }).notice("For the thread.");
    expect(harness.emu.botReplies("C3", root.ts).map((m) => m.text)).toEqual(["For the thread."]);
  });
});
