import { afterEach, describe, expect, it } from "vitest";
import { DiscordEmulator, waitFor } from "../../../test/emulators/discord/index.js";
import { untilQuiet } from "../../../test/support/quiet.js";
import { renderSystemPrompt } from "../../agent/context.js";
import { configSchema } from "../../config.js";
import { answer, type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

let h: Harness;
const extra: Harness[] = [];

afterEach(async () => {
  for (const x of extra.splice(0)) await x.close();
  await h?.close();
});

const finalTexts = (channelId: string) => h.emulator.botMessages(channelId).map((m) => m.content);

describe("Discord adapter: where it answers", () => {
  it("opens a thread from a mention, streams the answer by edits and renames the thread once with the title", async () => {
    const text = "Model Context Protocol connects models to tools. ".repeat(8).trim();
    h = await startHarness({ runner: new ScriptedRunner(answer(text, { title: "About MCP", chunk: 20 })) });
    const s = h.emulator.state;
    const asked = h.emulator.userMessage(s.general, "what is MCP and why care?", { mentionsBot: true });
    await waitFor(() => h.runner.done.length === 1);
    const thread = h.emulator.threads(s.general)[0]!;
    expect(thread.id).toBe(asked.id);
    expect(h.runner.inbounds[0]).toMatchObject({
      key: `discord:${s.guildId}:${thread.id}`,
      text: "what is MCP and why care?",
    });
    const [reply] = h.emulator.botMessages(thread.id);
    expect(reply?.content).toBe(text);
    expect(reply?.edits.length).toBeGreaterThan(0);
    await waitFor(() => h.emulator.renames.length === 1);
    expect(h.emulator.renames).toEqual([{ channelId: thread.id, name: "About MCP", at: expect.any(Number) }]);
    expect(h.emulator.requests.filter((r) => r.status === 429)).toEqual([]);
  });

  it("goes on in a new message when someone deletes the answer while it is written, losing no text", async () => {
    const first = "The first half of the answer, ";
    const rest = "and the second half after the deletion.";
    h = await startHarness({
      runner: new ScriptedRunner(async (inbound) => {
        const sink = inbound.reply.stream();
        sink.write(first);
        const thread = await waitFor(() => h.emulator.threads(h.emulator.state.general)[0]);
        const shown = await waitFor(() => h.emulator.botMessages(thread.id).find((m) => m.content !== ""));
        // A moderator deletes the bot's message.
        shown.deleted = true;
        sink.write(rest);
        await new Promise((r) => setTimeout(r, 400));
        sink.write(" The end.");
        await sink.finish();
      }),
    });
    const s = h.emulator.state;
    h.emulator.userMessage(s.general, "tell me in two halves", { mentionsBot: true });
    await waitFor(() => h.runner.done.length === 1);
    const thread = h.emulator.threads(s.general)[0]!;
    expect(finalTexts(thread.id)).toEqual([`${first}${rest} The end.`]);
    // Its edits were refused as Discord refuses them: Unknown Message.
    expect(h.emulator.requests.some((r) => r.status === 404)).toBe(true);
  });

  it("opens the threads of people mentioning it in one channel at once, not one round trip after another", async () => {
    // Each answer of Discord takes 150 ms: discord.js's queue would send the second
    // thread's request only after the first one's answer.
    const emulator = await DiscordEmulator.start({ rateLimits: { speed: 10 }, latencyMs: 150 });
    const harness = await startHarness({ emulator, runner: new ScriptedRunner(answer("ok")) });
    h = {
      ...harness,
      close: async () => {
        await harness.close();
        await emulator.stop();
      },
    };
    const s = h.emulator.state;
    const asked = ["one", "two", "three", "four", "five"].map((q) =>
      h.emulator.userMessage(s.general, `question ${q}`, { mentionsBot: true }),
    );
    await waitFor(() => h.runner.done.length === 5, { timeoutMs: 10_000 });
    expect(
      h.emulator
        .threads(s.general)
        .map((t) => t.id)
        .sort(),
    ).toEqual(asked.map((m) => m.id).sort());
    const opened = h.emulator.requests.filter((r) => r.method === "POST" && r.path.endsWith("/threads"));
    expect(opened.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    // Every request was sent before the first answer came back.
    expect(Math.max(...opened.map((r) => r.arrived))).toBeLessThan(Math.min(...opened.map((r) => r.at)));
    for (const m of asked) expect(finalTexts(m.id)).toEqual(["ok"]);
  });

  it("continues in its thread without a mention, and renames the thread only once", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("ok", { title: "A title" })) });
    const s = h.emulator.state;
    const asked = h.emulator.userMessage(s.general, "first question", { mentionsBot: true });
    await waitFor(() => h.runner.done.length === 1);
    h.emulator.userMessage(asked.id, "and a follow-up");
    await waitFor(() => h.runner.done.length === 2);
    expect(h.runner.inbounds[1]?.key).toBe(h.runner.inbounds[0]?.key);
    expect(h.runner.inbounds[1]?.history).toBeUndefined();
    expect(finalTexts(asked.id)).toEqual(["ok", "ok"]);
    await waitFor(() => h.emulator.renames.length >= 1);
    expect(h.emulator.renames.map((r) => r.name)).toEqual(["A title"]);
  });

  it("ignores its own messages, other bots, and unmentioned channel chatter", async () => {
    h = await startHarness();
    const s = h.emulator.state;
    h.emulator.userMessage(s.general, "just chatting");
    h.emulator.userMessage(s.general, "hey bot", { mentionsBot: true, author: s.otherBot });
    h.emulator.userMessage(s.general, "now you", { mentionsBot: true });
    await waitFor(() => h.runner.done.length === 1);
    // The bot's own answer came back on the gateway too: wait for it, then make sure nothing else started.
    await waitFor(() => h.emulator.botMessages(h.runner.inbounds[0]!.key.split(":")[2]!).length === 1);
    h.emulator.userMessage(s.general, "last", { mentionsBot: true });
    await waitFor(() => h.runner.done.length === 2);
    expect(h.runner.inbounds.map((i) => i.text)).toEqual(["now you", "last"]);
  });

  it("answers other bots when allowBots is on", async () => {
    h = await startHarness({ discord: { allowBots: true } });
    h.emulator.userMessage(h.emulator.state.general, "from a bot", {
      mentionsBot: true,
      author: h.emulator.state.otherBot,
    });
    await waitFor(() => h.runner.done.length === 1);
    expect(h.runner.inbounds[0]?.user.id).toBe(h.emulator.state.otherBot.id);
  });

  it("answers a mention inside an existing thread, with its earlier messages and authors as history", async () => {
    h = await startHarness();
    const s = h.emulator.state;
    const t = h.emulator.existingThread(s.general, "deploy trouble", [
      { author: s.alice, content: "the deploy failed at step 3" },
      { author: s.bob, content: "logs say the token expired" },
    ]);
    await waitFor(() => h.adapter.client.channels.cache.get(t.id));
    h.emulator.userMessage(t.id, "can you summarise?", { mentionsBot: true, author: s.bob });
    await waitFor(() => h.runner.done.length === 1);
    const inbound = h.runner.inbounds[0]!;
    expect(inbound.key).toBe(`discord:${s.guildId}:${t.id}`);
    expect(await inbound.history?.()).toEqual([
      { author: "alice", text: "the deploy failed at step 3", fromBot: false },
      { author: "bob", text: "logs say the token expired", fromBot: false },
    ]);
    expect(finalTexts(t.id)).toEqual(["Hello from the scripted runner."]);
    expect(h.emulator.threads()).toHaveLength(1);
    // Not the bot's thread: never renamed. title() does not wait for the rename, so the
    // check waits until nothing more reaches Discord.
    await inbound.reply.title("Nope");
    await untilQuiet(h.emulator.requests);
    expect(h.emulator.renames).toEqual([]);
  });

  it("answers DMs in the DM, one session per DM channel, never shared between users", async () => {
    h = await startHarness();
    const s = h.emulator.state;
    const a = h.emulator.dm(s.alice.id, "hi from alice");
    const b = h.emulator.dm(s.bob.id, "hi from bob");
    await waitFor(() => h.runner.done.length === 2);
    const keys = h.runner.inbounds.map((i) => i.key).sort();
    expect(keys).toEqual([`discord:dm:${a.channelId}`, `discord:dm:${b.channelId}`].sort());
    expect(finalTexts(a.channelId)).toEqual(["Hello from the scripted runner."]);
    expect(finalTexts(b.channelId)).toEqual(["Hello from the scripted runner."]);
  });

  it("answers once when two gateway sessions both receive the mention", async () => {
    const emulator = await DiscordEmulator.start({ rateLimits: { speed: 10 } });
    const runner = new ScriptedRunner();
    h = await startHarness({ emulator, runner });
    extra.push(await startHarness({ emulator, runner }));
    h.emulator.userMessage(emulator.state.general, "only once please", { mentionsBot: true });
    await waitFor(() => runner.done.length === 1);
    const thread = emulator.threads(emulator.state.general)[0]!;
    await waitFor(() => emulator.botMessages(thread.id).length === 1);
    h.emulator.userMessage(thread.id, "and again", { mentionsBot: true });
    await waitFor(() => runner.done.length === 2);
    expect(emulator.threads()).toHaveLength(1);
    expect(finalTexts(thread.id)).toEqual([
      "Hello from the scripted runner.",
      "Hello from the scripted runner.",
    ]);
    await h.close();
    await extra.pop()?.close();
    await emulator.stop();
    h = undefined as unknown as Harness;
  });

  it("passes incoming attachments as files the dispatcher can download", async () => {
    h = await startHarness();
    h.emulator.userMessage(h.emulator.state.general, "read this", {
      mentionsBot: true,
      attachments: [
        { filename: "notes.txt", contentType: "text/plain", data: Buffer.from("remember the milk") },
      ],
    });
    await waitFor(() => h.runner.done.length === 1);
    const [file] = h.runner.inbounds[0]!.attachments;
    expect(file).toMatchObject({ name: "notes.txt", mimeType: "text/plain", size: 17 });
    expect(Buffer.from(await file!.fetch()).toString()).toBe("remember the milk");
  });

  it("mentions in the text of other users become @names and the bot's mention disappears", async () => {
    h = await startHarness();
    h.emulator.userMessage(h.emulator.state.general, `ask <@${h.emulator.state.bob.id}> too`, {
      mentionsBot: true,
    });
    await waitFor(() => h.runner.done.length === 1);
    expect(h.runner.inbounds[0]?.text).toBe("ask @bob too");
  });
});

describe("Discord adapter: the channel that picks a per-channel prompt", () => {
  it("names the parent channel for a mention, a follow-up in its thread and a mention in another thread", async () => {
    h = await startHarness();
    const s = h.emulator.state;
    const asked = h.emulator.userMessage(s.general, "first question", { mentionsBot: true });
    await waitFor(() => h.runner.done.length === 1);
    h.emulator.userMessage(asked.id, "and a follow-up");
    await waitFor(() => h.runner.done.length === 2);
    const t = h.emulator.existingThread(s.general, "older talk", [{ author: s.bob, content: "hi all" }]);
    await waitFor(() => h.adapter.client.channels.cache.get(t.id));
    h.emulator.userMessage(t.id, "over here", { mentionsBot: true, author: s.bob });
    await waitFor(() => h.runner.done.length === 3);
    expect(h.runner.inbounds.map((i) => i.channel)).toEqual([s.general, s.general, s.general]);

    const config = configSchema.parse({
      agent: { channelPrompts: [{ platform: "discord", channel: s.general, prompt: "You help #general." }] },
    });
    const followUp = h.runner.inbounds[1]!;
    const prompt = renderSystemPrompt(config, {
      platform: followUp.platform,
      channel: followUp.channel,
      model: "gpt-4o",
      user: followUp.user.name ?? followUp.user.id,
    });
    expect(prompt).toBe("You help #general.");
  });

  it("names the thread's parent channel for /ask run inside a thread", async () => {
    h = await startHarness();
    const s = h.emulator.state;
    const t = h.emulator.existingThread(s.general, "older talk", [{ author: s.bob, content: "hi all" }]);
    await waitFor(() => h.adapter.client.channels.cache.get(t.id));
    h.emulator.slash("ask", { question: "what now?" }, t.id, s.bob.id);
    await waitFor(() => h.runner.done.length === 1);
    expect(h.runner.inbounds[0]).toMatchObject({ key: `discord:${s.guildId}:${t.id}`, channel: s.general });
  });

  it("names the DM channel itself in a DM", async () => {
    h = await startHarness();
    const dm = h.emulator.dm(h.emulator.state.alice.id, "hello");
    await waitFor(() => h.runner.done.length === 1);
    expect(h.runner.inbounds[0]?.channel).toBe(dm.channelId);
  });
});
