import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/emulators/discord/index.js";
import { forumPost } from "../../../test/emulators/discord/threads.js";
import { untilQuiet } from "../../../test/support/quiet.js";
import { answer, type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";
import { NOTHING_ASKED_ON_DISCORD } from "./replies.js";

let h: Harness;

afterEach(async () => {
  await h?.close();
});

const asked = () => h.runner.inbounds.map((i) => i.text);

describe("Discord adapter: messages with nothing to ask", () => {
  it("asks the model nothing for a sticker or a poll in a DM", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("Hi.")) });
    const s = h.emulator.state;
    h.emulator.dm(s.alice.id, "", { carries: { stickers: ["wave"] } });
    h.emulator.dm(s.alice.id, "", { carries: { poll: { question: "Lunch?", answers: ["yes", "no"] } } });
    h.emulator.dm(s.alice.id, "hello");
    await waitFor(() => h.runner.done.length >= 1);
    await untilQuiet(h.emulator.requests);
    expect(asked()).toEqual(["hello"]);
  });

  it("asks the model nothing for a sticker in a thread it follows", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("Sure.")) });
    const s = h.emulator.state;
    const question = h.emulator.userMessage(s.general, "plan the release", { mentionsBot: true });
    await waitFor(() => h.runner.done.length === 1);
    h.emulator.userMessage(question.id, "", { carries: { stickers: ["thumbs up"] } });
    h.emulator.userMessage(question.id, "and the date?");
    await waitFor(() => h.runner.done.length >= 2);
    await untilQuiet(h.emulator.requests);
    expect(asked()).toEqual(["plan the release", "and the date?"]);
  });

  it("gives the model a forwarded message's text and files", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("It failed at 10:00.")) });
    const s = h.emulator.state;
    const original = h.emulator.userMessage(s.random, "The build is red since 10:00.", {
      attachments: [{ filename: "log.txt", contentType: "text/plain", data: Buffer.from("FAIL: test 12") }],
    });
    h.emulator.dm(s.alice.id, "", { carries: { forwarded: original } });
    await waitFor(() => h.runner.done.length === 1);
    const inbound = h.runner.inbounds[0];
    expect(inbound?.text).toBe("Forwarded message:\nThe build is red since 10:00.");
    expect(inbound?.attachments.map((f) => f.name)).toEqual(["log.txt"]);
    expect(Buffer.from((await inbound?.attachments[0]?.fetch()) ?? []).toString()).toBe("FAIL: test 12");
  });

  it("shows a forwarded message in the thread's earlier messages when mentioned mid-thread", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("Looks like test 12.")) });
    const s = h.emulator.state;
    const original = h.emulator.userMessage(s.random, "The build is red since 10:00.");
    const thread = h.emulator.existingThread(s.general, "ci", [
      { author: s.bob, content: "anyone seen this?" },
    ]);
    const forward = h.emulator.userMessage(thread.id, "", { carries: { forwarded: original } });
    h.emulator.userMessage(thread.id, "what do you make of it?", { mentionsBot: true });
    await waitFor(() => h.runner.done.length === 1);
    expect(asked()).toEqual(["what do you make of it?"]);
    const history = await h.runner.inbounds[0]?.history?.();
    expect(history?.map((m) => m.text)).toEqual([
      "anyone seen this?",
      "Forwarded message:\nThe build is red since 10:00.",
    ]);
    expect(forward.content).toBe("");
  });
});

describe("Discord adapter: a mention with nothing after it", () => {
  it("answers a bare mention in a channel in place, saying what to ask: no thread, nothing asked of the model", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("Never shown.")) });
    const s = h.emulator.state;
    const bare = h.emulator.userMessage(s.general, "", { mentionsBot: true });
    const told = await waitFor(() => h.emulator.botMessages(s.general).find((m) => m.replyTo === bare.id));
    expect(told.content).toBe(NOTHING_ASKED_ON_DISCORD);
    expect(told.allowedMentions).toMatchObject({ parse: [], replied_user: false });
    await untilQuiet(h.emulator.requests);
    expect(h.emulator.threads(s.general)).toEqual([]);
    expect(h.runner.inbounds).toEqual([]);
    expect(h.emulator.botMessages(s.general)).toHaveLength(1);
  });

  it("asks about the message a bare mention replies to, in a thread opened from the mention", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("Rotate them in the vault.")) });
    const s = h.emulator.state;
    const bobs = h.emulator.userMessage(s.general, "how do I rotate the deploy keys?", {
      author: s.bob,
      attachments: [{ filename: "keys.txt", contentType: "text/plain", data: Buffer.from("key-1") }],
    });
    const bare = h.emulator.userMessage(s.general, "", {
      mentionsBot: true,
      carries: { replyTo: bobs.id, pingReplied: false },
    });
    await waitFor(() => h.runner.done.length === 1);
    const inbound = h.runner.inbounds[0];
    expect(inbound?.text).toBe("About this message by bob:\nhow do I rotate the deploy keys?");
    expect(inbound?.attachments.map((f) => f.name)).toEqual(["keys.txt"]);
    expect(inbound?.key).toBe(`discord:${s.guildId}:${bare.id}`);
    const [thread] = h.emulator.threads(s.general);
    expect(thread).toMatchObject({ id: bare.id, name: "how do I rotate the deploy keys?" });
    expect(h.emulator.botMessages(bare.id).map((m) => m.content)).toEqual(["Rotate them in the vault."]);
  });

  it("answers a bare mention replying to its own answer in place, as one that asks nothing", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("Ok.")) });
    const s = h.emulator.state;
    h.emulator.denyBot(s.general, "CREATE_PUBLIC_THREADS");
    h.emulator.userMessage(s.general, "hello", { mentionsBot: true });
    await waitFor(() => h.runner.done.length === 1);
    const answer_ = await waitFor(() => h.emulator.botMessages(s.general)[0]);
    const bare = h.emulator.userMessage(s.general, "", {
      mentionsBot: true,
      carries: { replyTo: answer_.id, pingReplied: false },
    });
    const told = await waitFor(() => h.emulator.botMessages(s.general).find((m) => m.replyTo === bare.id));
    expect(told.content).toBe(NOTHING_ASKED_ON_DISCORD);
    await untilQuiet(h.emulator.requests);
    expect(h.runner.inbounds).toHaveLength(1);
  });
});

describe("Discord adapter: a forum post", () => {
  it("answers a post that mentions it with its question once, not again as an earlier message", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("Restart the runner.")) });
    const { thread, starter } = forumPost(h.emulator, {
      title: "CI stuck",
      text: "the CI queue is stuck, what now?",
      mentionsBot: true,
    });
    expect(starter.id).toBe(thread.id);
    await waitFor(() => h.runner.done.length === 1);
    const inbound = h.runner.inbounds[0];
    expect(inbound?.text).toBe("the CI queue is stuck, what now?");
    expect(await inbound?.history?.()).toEqual([]);
    expect(h.emulator.botMessages(thread.id).map((m) => m.content)).toEqual(["Restart the runner."]);
  });

  it("gives a later mention in the post its opening message as an earlier one", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("Restart the runner.")) });
    const s = h.emulator.state;
    const { thread } = forumPost(h.emulator, {
      title: "CI stuck",
      text: "the CI queue is stuck",
      author: s.bob,
    });
    h.emulator.userMessage(thread.id, "any idea?", { mentionsBot: true });
    await waitFor(() => h.runner.done.length === 1);
    const history = await h.runner.inbounds[0]?.history?.();
    expect(history?.map((m) => `${m.author}: ${m.text}`)).toEqual(["bob: the CI queue is stuck"]);
  });
});
