import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../../../test/emulators/slack/adapter-harness.js";
import { waitFor } from "../../../test/emulators/slack/index.js";
import { REFUSED_NOTE } from "../../runtime/access.js";

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

/** The ephemeral messages `user` was sent, where they went, and whether Slack shows them. */
const toldTo = (x: Harness, user: string) =>
  x.emu.state.ephemerals
    .filter((e) => e.user === user && e.via === "chat.postEphemeral")
    .map((e) => ({ text: e.text, thread_ts: e.thread_ts, shown: e.shown }));

describe("Slack adapter: where a notice for one person shows", () => {
  it("in the channel for a top-level mention, whose thread has no replies for Slack to show it under", async () => {
    h = await startHarness();
    h.runner.admit = () => "tell";
    h.emu.mention("C1", "U_BOB", "let me in");
    await waitFor(() => toldTo(h!, "U_BOB").length > 0);
    expect(toldTo(h, "U_BOB")).toEqual([{ text: REFUSED_NOTE, thread_ts: undefined, shown: true }]);
  });

  it("under the thread for a message in a thread", async () => {
    h = await startHarness();
    h.runner.admit = () => "tell";
    const root = h.emu.post("C1", "U_ALICE", "a question");
    h.emu.mention("C1", "U_BOB", "me too", { threadTs: root.ts });
    await waitFor(() => toldTo(h!, "U_BOB").length > 0);
    expect(toldTo(h, "U_BOB")).toEqual([{ text: REFUSED_NOTE, thread_ts: root.ts, shown: true }]);
  });

  it("under the thread once the answer is in it", async () => {
    h = await startHarness();
    h.runner.script = async (inbound) => {
      await inbound.reply.notice("Before the answer.");
      const sink = inbound.reply.stream();
      sink.write("The answer.");
      await sink.finish();
      await inbound.reply.notice("After the answer.");
    };
    const m = h.emu.mention("C1", "U_ALICE", "a question");
    await waitFor(() => toldTo(h!, "U_ALICE").length === 2);
    expect(toldTo(h, "U_ALICE")).toEqual([
      { text: "Before the answer.", thread_ts: undefined, shown: true },
      { text: "After the answer.", thread_ts: m.ts, shown: true },
    ]);
  });

  it("in the channel for a question `/switchboard ask` posted, which has no replies yet", async () => {
    h = await startHarness();
    h.runner.script = (inbound) => inbound.reply.notice("You have used today's budget.");
    h.emu.slash("/switchboard", "ask what happened?", "U_ALICE", "C1");
    await waitFor(() => toldTo(h!, "U_ALICE").length > 0);
    expect(toldTo(h, "U_ALICE")).toEqual([
      { text: "You have used today's budget.", thread_ts: undefined, shown: true },
    ]);
  });
});
