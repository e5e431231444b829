import {
  AttachmentBuilder,
  ChannelType,
  Client,
  Events,
  GatewayIntentBits,
  type Interaction,
  type Message,
  Partials,
  RESTEvents,
  type TextChannel,
} from "discord.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DiscordEmulator, waitFor } from "./index.js";

let emulator: DiscordEmulator;
let client: Client;
let messages: Message[];
let interactions: Interaction[];

async function connect(opts: { rejectOnRateLimit?: boolean } = {}): Promise<Client> {
  const c = new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.DirectMessages,
      GatewayIntentBits.MessageContent,
    ],
    partials: [Partials.Channel],
    rest: {
      api: emulator.apiUrl,
      ...(opts.rejectOnRateLimit ? { rejectOnRateLimit: () => true, retries: 0 } : {}),
    },
  });
  c.on(Events.MessageCreate, (m) => messages.push(m));
  c.on(Events.InteractionCreate, (i) => interactions.push(i));
  const ready = new Promise<void>((resolve) => c.once(Events.ClientReady, () => resolve()));
  await c.login(emulator.token);
  await ready;
  return c;
}

beforeEach(async () => {
  emulator = await DiscordEmulator.start({ rateLimits: { speed: 20 } });
  messages = [];
  interactions = [];
  client = await connect();
});

afterEach(async () => {
  await client.destroy();
  await emulator.stop();
});

function general(): TextChannel {
  const channel = client.channels.cache.get(emulator.state.general);
  if (channel?.type !== ChannelType.GuildText) throw new Error("general is not cached as a text channel");
  return channel;
}

describe("Discord emulator with the real discord.js client", () => {
  it("brings discord.js to ready with the guild, its channels and the bot member", () => {
    expect(client.user?.id).toBe(emulator.bot.id);
    const guild = client.guilds.cache.get(emulator.guildId);
    expect(guild?.available).toBe(true);
    expect(guild?.channels.cache.get(emulator.state.forum)?.type).toBe(ChannelType.GuildForum);
    expect(guild?.members.me?.id).toBe(emulator.bot.id);
    expect(guild?.roles.everyone.id).toBe(emulator.guildId);
    expect(general().permissionsFor(client.user!)?.has("SendMessagesInThreads")).toBe(true);
  });

  it("delivers a user's mention as MESSAGE_CREATE with content and mentions", async () => {
    emulator.userMessage(emulator.state.general, "what is MCP?", { mentionsBot: true });
    const m = await waitFor(() => messages.find((x) => x.author.id === emulator.state.alice.id));
    expect(m.content).toBe(`<@${emulator.bot.id}> what is MCP?`);
    expect(m.mentions.users.has(emulator.bot.id)).toBe(true);
    expect(m.guildId).toBe(emulator.guildId);
  });

  it("delivers DMs through the partial DM channel", async () => {
    emulator.dm(emulator.state.bob.id, "hello in private");
    const m = await waitFor(() => messages.find((x) => x.content === "hello in private"));
    expect(m.channel.type).toBe(ChannelType.DM);
    expect(m.guildId).toBeNull();
    if (!m.channel.isSendable()) throw new Error("DM channel not sendable");
    await m.channel.send("private answer");
    expect(emulator.botMessages(m.channelId).map((x) => x.content)).toEqual(["private answer"]);
  });

  it("stores sends and edits with their history, and sends the bot its own messages back", async () => {
    const sent = await general().send("first");
    await sent.edit("second");
    await sent.edit("third");
    const stored = emulator.botMessages(emulator.state.general)[0];
    expect(stored?.content).toBe("third");
    expect(stored?.edits).toEqual(["first", "second"]);
    await waitFor(() => messages.find((x) => x.id === sent.id && x.author.bot));
  });

  it("rejects content over 2,000 characters with error 50035", async () => {
    await expect(general().send("x".repeat(2001))).rejects.toMatchObject({ code: 50035, status: 400 });
    await general().send("x".repeat(2000));
  });

  it("takes multipart uploads and refuses more than 10 attachments", async () => {
    const file = (n: number) => new AttachmentBuilder(Buffer.from(`file ${n}`), { name: `f${n}.txt` });
    await general().send({ content: "one file", files: [file(1)] });
    const stored = emulator.botMessages(emulator.state.general)[0];
    expect(stored?.attachments.map((a) => [a.filename, a.data.toString()])).toEqual([["f1.txt", "file 1"]]);
    const res = await fetch(stored!.attachments[0]!.url);
    expect(await res.text()).toBe("file 1");
    const eleven = Array.from({ length: 11 }, (_, i) => file(i));
    await expect(general().send({ files: eleven })).rejects.toMatchObject({ code: 50035 });
  });

  it("starts a thread from a message (thread id = message id) and limits renames to 2 per window", async () => {
    await client.destroy();
    client = await connect({ rejectOnRateLimit: true });
    const m = await general().send("start here");
    const thread = await m.startThread({ name: "provisional" });
    expect(thread.id).toBe(m.id);
    expect(emulator.channel(thread.id)?.parent_id).toBe(emulator.state.general);
    await thread.setName("one");
    await thread.setName("two");
    await expect(thread.setName("three")).rejects.toHaveProperty("retryAfter");
    expect(emulator.renames.map((r) => r.name)).toEqual(["one", "two"]);
    await thread.send("inside");
    expect(emulator.botMessages(thread.id).map((x) => x.content)).toEqual(["inside"]);
  });

  it("answers 5 writes per channel per window, then 429 with retry_after and rate-limit headers", async () => {
    await client.destroy();
    client = await connect({ rejectOnRateLimit: true });
    const limited: number[] = [];
    client.rest.on(RESTEvents.RateLimited, (info) => limited.push(info.retryAfter));
    const errors: unknown[] = [];
    for (let i = 0; i < 7; i++)
      await general()
        .send(`m${i}`)
        .catch((e: unknown) => errors.push(e));
    expect(emulator.botMessages(emulator.state.general)).toHaveLength(5);
    expect(errors.length).toBe(2);
    expect(errors[0]).toMatchObject({ retryAfter: expect.any(Number) });
  });

  it("answers every edit with 429 in the 429-on-edits mode while sends still work", async () => {
    await client.destroy();
    client = await connect({ rejectOnRateLimit: true });
    const m = await general().send("v1");
    emulator.rateLimitEdits(200, 2);
    await expect(m.edit("v2")).rejects.toHaveProperty("retryAfter");
    await expect(m.edit("v2")).rejects.toHaveProperty("retryAfter");
    await waitFor(() =>
      m.edit("v3").then(
        () => true,
        () => false,
      ),
    );
    expect(emulator.botMessages(emulator.state.general)[0]?.content).toBe("v3");
    expect(emulator.limiter.hits.filter((h) => h.kind === "edit")).toHaveLength(2);
  });

  it("resumes after a dropped connection and replays the events sent meanwhile, once", async () => {
    emulator.dropConnection({ hold: true });
    emulator.userMessage(emulator.state.general, "sent while offline", { mentionsBot: true });
    emulator.release();
    await waitFor(() => messages.find((x) => x.content.endsWith("sent while offline")));
    expect(emulator.gateway.stats.resumes).toBeGreaterThanOrEqual(1);
    expect(emulator.gateway.stats.identifies).toBe(1);
    expect(messages.filter((x) => x.content.endsWith("sent while offline"))).toHaveLength(1);
  });

  it("delivers the same MESSAGE_CREATE twice when asked to", async () => {
    const raw: string[] = [];
    client.on(Events.Raw, (packet: { t?: string; d?: { id?: string } }) => {
      if (packet.t === "MESSAGE_CREATE" && packet.d?.id) raw.push(packet.d.id);
    });
    emulator.deliverTwice = true;
    const sent = emulator.userMessage(emulator.state.general, "twice");
    await waitFor(() => raw.filter((id) => id === sent.id).length === 2);
  });

  it("runs slash commands: registration, deferral, @original edit, follow-up, ephemeral reply", async () => {
    await client.application!.commands.set(
      [{ name: "ask", description: "Ask", options: [] }],
      emulator.guildId,
    );
    expect(emulator.state.commands.guild.get(emulator.guildId)?.map((c) => c.name)).toEqual(["ask"]);
    const rec = emulator.slash("ask", { question: "why?" }, emulator.state.general, emulator.state.alice.id);
    const i = await waitFor(() => interactions.find((x) => x.id === rec.id));
    if (!i.isChatInputCommand()) throw new Error("not a chat input command");
    expect(i.options.getString("question")).toBe("why?");
    await i.deferReply();
    await i.editReply("because");
    await i.followUp({ content: "more", flags: 64 });
    expect(rec.callbacks).toEqual([5]);
    expect(emulator.state.findMessage(rec.originalId!)?.content).toBe("because");
    expect(emulator.state.findMessage(rec.followupIds[0]!)?.flags).toBe(64);
  });

  it("sends autocomplete interactions and records the choices", async () => {
    const rec = emulator.autocomplete(
      "model",
      { name: "gp" },
      "name",
      emulator.state.general,
      emulator.state.bob.id,
    );
    const i = await waitFor(() => interactions.find((x) => x.id === rec.id));
    if (!i.isAutocomplete()) throw new Error("not autocomplete");
    expect(i.options.getFocused()).toBe("gp");
    await i.respond([{ name: "gpt-4o", value: "gpt-4o" }]);
    expect(rec.choices).toEqual([{ name: "gpt-4o", value: "gpt-4o" }]);
  });

  it("serves thread history newest first with before/limit", async () => {
    const t = emulator.existingThread(emulator.state.general, "old talk", [
      { author: emulator.state.alice, content: "a1" },
      { author: emulator.state.bob, content: "b1" },
      { author: emulator.state.alice, content: "a2" },
    ]);
    const thread = await waitFor(() => client.channels.cache.get(t.id));
    if (!thread.isThread()) throw new Error("not a thread");
    const fetched = await thread.messages.fetch({ limit: 2 });
    expect([...fetched.values()].map((m) => m.content)).toEqual(["a2", "b1"]);
  });
});
