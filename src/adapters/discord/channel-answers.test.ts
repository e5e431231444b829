import { afterEach, describe, expect, it, vi } from "vitest";
import { waitFor } from "../../../test/emulators/discord/index.js";
import { adapterState } from "../../../test/support/adapter-state.js";
import { untilQuiet } from "../../../test/support/quiet.js";
import { answer, type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

let h: Harness | undefined;
const closing: Array<() => Promise<void>> = [];

afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const close of closing.splice(0)) await close();
});

/** The bot's answer in the channel that replies to `id`, once it is written whole. */
const answerTo = (harness: Harness, channel: string, id: string, text: string) =>
  waitFor(() => harness.emulator.botMessages(channel).find((m) => m.replyTo === id && m.content === text));

describe("Discord adapter: a reply to an answer written in the channel", () => {
  it("goes on with that answer's conversation, also from its later messages and without a ping", async () => {
    const long = `${"A first answer too long for one message. ".repeat(60).trim()} The end.`;
    const runner = new ScriptedRunner(answer(long, { chunk: long.length }));
    h = await startHarness({ runner });
    const s = h.emulator.state;
    // Discord will open no thread here: the answers go to the channel.
    h.emulator.denyBot(s.general, "CREATE_PUBLIC_THREADS");
    const asked = h.emulator.userMessage(s.general, "first question", { mentionsBot: true });
    await waitFor(() => runner.done.length === 1);
    const parts = h.emulator.botMessages(s.general);
    expect(parts.length).toBeGreaterThan(1);
    expect(parts[0]?.replyTo).toBe(asked.id);

    runner.script = answer("The second answer.");
    const follow = h.emulator.userMessage(s.general, "and what else?", {
      carries: { replyTo: parts.at(-1)!.id },
    });
    await waitFor(() => runner.done.length === 2);
    const second = await answerTo(h, s.general, follow.id, "The second answer.");

    runner.script = answer("The third answer.");
    const quiet = h.emulator.userMessage(s.general, "one more", {
      carries: { replyTo: second.id, pingReplied: false },
    });
    await waitFor(() => runner.done.length === 3);
    await answerTo(h, s.general, quiet.id, "The third answer.");

    const key = `discord:${s.guildId}:${asked.id}`;
    expect(runner.inbounds.map((i) => [i.key, i.text])).toEqual([
      [key, "first question"],
      [key, "and what else?"],
      [key, "one more"],
    ]);
    expect(h.emulator.threads(s.general)).toEqual([]);
  });

  it("finds the conversation after a restart, from the store", async () => {
    const { state, store } = await adapterState();
    closing.push(() => store.close());
    const first = new ScriptedRunner(answer("Before the restart."));
    const before = await startHarness({ runner: first, state });
    const s = before.emulator.state;
    before.emulator.denyBot(s.general, "CREATE_PUBLIC_THREADS");
    const asked = before.emulator.userMessage(s.general, "remember this", { mentionsBot: true });
    const answered = await answerTo(before, s.general, asked.id, "Before the restart.");
    await untilQuiet(before.emulator.requests);
    const emulator = before.emulator;
    await before.adapter.stop();
    await before.adapter.client.destroy();
    closing.push(() => emulator.stop());

    const second = new ScriptedRunner(answer("After the restart."));
    h = await startHarness({ runner: second, state, emulator });
    const follow = emulator.userMessage(s.general, "what did I ask?", { carries: { replyTo: answered.id } });
    await answerTo(h, s.general, follow.id, "After the restart.");
    expect(second.inbounds.map((i) => i.key)).toEqual([`discord:${s.guildId}:${asked.id}`]);
    expect(emulator.threads(s.general)).toEqual([]);
  });

  it("leaves a reply to its answer in a thread it opened, and other people's replies, as they were", async () => {
    const runner = new ScriptedRunner(answer("In the thread."));
    h = await startHarness({ runner });
    const s = h.emulator.state;
    const bobs = h.emulator.userMessage(s.general, "lunch at noon?", { author: s.bob });
    h.emulator.userMessage(s.general, "sure", { carries: { replyTo: bobs.id } });
    const asked = h.emulator.userMessage(s.general, "a question", { mentionsBot: true });
    await waitFor(() => runner.done.length === 1);
    const inThread = await waitFor(() => h!.emulator.botMessages(asked.id)[0]);
    h.emulator.userMessage(asked.id, "a follow-up in the thread", { carries: { replyTo: inThread.id } });
    await waitFor(() => runner.done.length === 2);
    await untilQuiet(h.emulator.requests);
    expect(runner.inbounds.map((i) => i.key)).toEqual([
      `discord:${s.guildId}:${asked.id}`,
      `discord:${s.guildId}:${asked.id}`,
    ]);
  });

  it("goes on with an /ask answered in the channel, found by its answer", async () => {
    const runner = new ScriptedRunner(answer("The /ask answer."));
    h = await startHarness({ runner });
    const s = h.emulator.state;
    h.emulator.denyBot(s.general, "CREATE_PUBLIC_THREADS");
    const rec = h.emulator.slash("ask", { question: "why?" }, s.general, s.alice.id);
    await waitFor(() => runner.done.length === 1);
    const answered = await waitFor(() => s.findMessage(rec.followupIds[0] ?? ""));
    expect(answered.content).toBe("The /ask answer.");
    runner.script = answer("Because.");
    const follow = h.emulator.userMessage(s.general, "why not?", { carries: { replyTo: answered.id } });
    await answerTo(h, s.general, follow.id, "Because.");
    // A reply to the question shown goes on with it too.
    runner.script = answer("Still because.");
    const again = h.emulator.userMessage(s.general, "really?", { carries: { replyTo: rec.originalId! } });
    await answerTo(h, s.general, again.id, "Still because.");
    expect(runner.inbounds.map((i) => i.key)).toEqual([
      `discord:${s.guildId}:${rec.id}`,
      `discord:${s.guildId}:${rec.id}`,
      `discord:${s.guildId}:${rec.id}`,
    ]);
  });

  it("goes on with what a taken-over turn added to a channel answer", async () => {
    const runner = new ScriptedRunner(answer("Before the crash."));
    h = await startHarness({ runner });
    const s = h.emulator.state;
    h.emulator.denyBot(s.general, "CREATE_PUBLIC_THREADS");
    const asked = h.emulator.userMessage(s.general, "long job", { mentionsBot: true });
    const first = await answerTo(h, s.general, asked.id, "Before the crash.");
    const key = `discord:${s.guildId}:${asked.id}`;
    // Another process finishes the turn from its record, in a message of its own.
    const sink = h.adapter.replyFor(key, { messages: [first.id], channel: s.general }).stream();
    sink.write(`\n\n${"And after it. ".repeat(160)}`);
    await sink.finish();
    const added = h.emulator.botMessages(s.general).at(-1)!;
    expect(added.id).not.toBe(first.id);
    runner.script = answer("Still the same conversation.");
    const follow = h.emulator.userMessage(s.general, "thanks", { carries: { replyTo: added.id } });
    await answerTo(h, s.general, follow.id, "Still the same conversation.");
    expect(runner.inbounds.map((i) => i.key)).toEqual([key, key]);
  });

  it("fetches a rebuilt reply's channel again after a fetch that failed, and writes the answer", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("unused")) });
    const s = h.emulator.state;
    const key = `discord:${s.guildId}:${s.general}`;
    const fetch = vi
      .spyOn(h.adapter.client.channels, "fetch")
      .mockRejectedValueOnce(new Error("read ECONNRESET"));
    const sink = h.adapter.replyFor(key, { messages: [], channel: s.general }).stream();
    sink.write("Written after a reset.");
    await sink.finish();
    expect(fetch.mock.calls.length).toBeGreaterThan(1);
    expect(h.emulator.botMessages(s.general).map((m) => m.content)).toContain("Written after a reset.");
  });
});
