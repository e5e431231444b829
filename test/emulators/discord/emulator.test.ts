import {
  AttachmentBuilder,
  ChannelType,
  Client,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  type Interaction,
  type Message,
  Partials,
  RateLimitError,
  REST,
  RESTEvents,
  Routes,
  type TextChannel,
} from "discord.js";
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import WebSocket from "ws";
import { DiscordEmulator, type DiscordEmulatorOptions, waitFor } from "./index.js";

let emulator: DiscordEmulator;
let client: Client;
let messages: Message[];
let interactions: Interaction[];

const ALL_INTENTS = [
  GatewayIntentBits.Guilds,
  GatewayIntentBits.GuildMessages,
  GatewayIntentBits.DirectMessages,
  GatewayIntentBits.MessageContent,
];

async function connect(
  opts: { rejectOnRateLimit?: boolean; intents?: GatewayIntentBits[] } = {},
): Promise<Client> {
  const c = new Client({
    intents: opts.intents ?? ALL_INTENTS,
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

  it("routes a guild's events to the shard that owns the guild, and direct messages to shard 0", async () => {
    const seen: Record<number, string[]> = { 0: [], 1: [] };
    const shards = await Promise.all(
      [0, 1].map(async (id) => {
        const c = new Client({
          intents: ALL_INTENTS,
          partials: [Partials.Channel],
          rest: { api: emulator.apiUrl },
          shards: [id],
          shardCount: 2,
        });
        c.on(Events.MessageCreate, (m) => seen[id]!.push(m.content));
        const ready = new Promise<void>((resolve) => c.once(Events.ClientReady, () => resolve()));
        await c.login(emulator.token);
        await ready;
        return c;
      }),
    );
    try {
      const owner = Number((BigInt(emulator.guildId) >> 22n) % 2n);
      // Only the owner knows the guild: READY lists it, GUILD_CREATE comes to it alone.
      expect(shards.map((c) => c.guilds.cache.has(emulator.guildId))).toEqual([owner === 0, owner === 1]);
      emulator.userMessage(emulator.state.general, "to the guild's shard", { mentionsBot: true });
      emulator.dm(emulator.state.bob.id, "to shard zero");
      const guildMessage = (m: string) => m.endsWith("to the guild's shard");
      await waitFor(() => seen[owner]!.some(guildMessage) && seen[0]!.includes("to shard zero"));
      await new Promise((r) => setTimeout(r, 200));
      expect(seen[owner]!.filter(guildMessage)).toHaveLength(1);
      expect(seen[1 - owner]!.filter(guildMessage)).toEqual([]);
      expect(seen[1]!).not.toContain("to shard zero");
    } finally {
      await Promise.all(shards.map((c) => c.destroy()));
    }
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

  it("sends a reply to a message of the channel, and refuses one to a message that is not there unless told not to fail", async () => {
    // A naive client: raw requests, no discord.js.
    const post = async (channel: string, body: Record<string, unknown>) => {
      const res = await fetch(`${emulator.apiUrl}/v10/channels/${channel}/messages`, {
        method: "POST",
        headers: { authorization: `Bot ${emulator.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const { general, random } = emulator.state;
    const asked = emulator.userMessage(general, "a question");
    const reply = await post(general, { content: "an answer", message_reference: { message_id: asked.id } });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      type: 19,
      message_reference: { message_id: asked.id, channel_id: general },
    });
    // Another channel's message, and one that never was: refused, nothing sent.
    for (const ref of [{ message_id: asked.id, channel_id: random }, { message_id: "1234" }]) {
      const refused = await post(random, { content: "lost", message_reference: ref });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({
        code: 50035,
        errors: { message_reference: { _errors: [{ code: "REPLIES_UNKNOWN_MESSAGE" }] } },
      });
    }
    expect(emulator.botMessages(random)).toEqual([]);
    const plain = await post(general, {
      content: "still sent",
      message_reference: { message_id: "1234", fail_if_not_exists: false },
    });
    expect(plain.status).toBe(200);
    expect(plain.body.type).toBe(0);
    expect(plain.body.message_reference).toBeUndefined();
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

  it("gives a lagged session each event later than the others, in order", async () => {
    const other = await connect();
    onTestFinished(() => other.destroy());
    const seen: Array<{ who: string; text: string; at: number }> = [];
    const watch = (c: Client, who: string) =>
      c.on(Events.MessageCreate, (m) => seen.push({ who, text: m.content, at: Date.now() }));
    watch(client, "first");
    watch(other, "lagged");
    emulator.gateway.lag(1, 300);
    const sentAt = Date.now();
    emulator.userMessage(emulator.state.general, "one");
    emulator.userMessage(emulator.state.general, "two");
    await waitFor(() => seen.filter((s) => s.who === "lagged").length === 2);
    const of = (who: string) => seen.filter((s) => s.who === who);
    expect(of("first").map((s) => s.text)).toEqual(["one", "two"]);
    expect(of("lagged").map((s) => s.text)).toEqual(["one", "two"]);
    for (const s of of("first")) expect(s.at - sentAt).toBeLessThan(300);
    for (const s of of("lagged")) expect(s.at - sentAt).toBeGreaterThanOrEqual(300);
    expect(() => emulator.gateway.lag(2, 10)).toThrow("No gateway session 2");
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

describe("Discord emulator: as strict as Discord", () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** A fresh emulator with `opts`, and a client connected to it. */
  async function restart(
    opts: DiscordEmulatorOptions,
    connectOpts: Parameters<typeof connect>[0] = {},
  ): Promise<void> {
    await client.destroy();
    await emulator.stop();
    emulator = await DiscordEmulator.start(opts);
    client = await connect(connectOpts);
  }

  /** A naive client: a raw message post to #random, no discord.js. */
  const post = async (body: Record<string, unknown>) => {
    const res = await fetch(`${emulator.apiUrl}/v10/channels/${emulator.state.random}/messages`, {
      method: "POST",
      headers: { authorization: `Bot ${emulator.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return {
      status: res.status,
      body: (await res.json()) as { id?: string; content?: string; code?: number; message?: string },
    };
  };

  it("returns the message already created for an enforced nonce, creates one per post without enforcement, and refuses long nonces", async () => {
    const first = await post({ content: "one", nonce: "n-1", enforce_nonce: true });
    const again = await post({ content: "two", nonce: "n-1", enforce_nonce: true });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    // The message as it was: the second post changed nothing.
    expect(again.body.content).toBe("one");
    const loose = await post({ content: "three", nonce: "n-1" });
    expect(loose.body.id).not.toBe(first.body.id);
    const long = await post({ content: "four", nonce: "x".repeat(26), enforce_nonce: true });
    expect(long.status).toBe(400);
    expect(long.body.code).toBe(50035);
    expect(emulator.botMessages(emulator.state.random).map((m) => m.content)).toEqual(["one", "three"]);
  });

  it("refuses the bot's writes its permissions do not allow with 403 Missing Permissions (50013), threads by their parent's", async () => {
    const raw = (path: string, body: Record<string, unknown> = {}) =>
      fetch(`${emulator.apiUrl}/v10${path}`, {
        method: "POST",
        headers: { authorization: `Bot ${emulator.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then(async (res) => ({ status: res.status, body: (await res.json().catch(() => ({}))) as object }));
    const random = emulator.state.random;
    const question = emulator.userMessage(random, "a question");
    // The tests after this one write to #random as they please.
    onTestFinished(() => emulator.state.botDenied.clear());
    emulator.denyBot(random, "SEND_MESSAGES_IN_THREADS");
    const thread = await raw(`/channels/${random}/messages/${question.id}/threads`, { name: "Question" });
    expect(thread.status).toBe(201);
    const missing = { status: 403, body: { message: "Missing Permissions", code: 50013 } };
    expect(await raw(`/channels/${question.id}/messages`, { content: "in the thread" })).toEqual(missing);
    expect(await raw(`/channels/${question.id}/typing`)).toEqual(missing);
    // The channel itself still takes messages: only threads lost the permission.
    expect((await post({ content: "in the channel" })).status).toBe(200);
    emulator.denyBot(random, "SEND_MESSAGES", "CREATE_PUBLIC_THREADS");
    expect(await post({ content: "again" })).toEqual(missing);
    const other = emulator.userMessage(random, "another question");
    expect(await raw(`/channels/${random}/messages/${other.id}/threads`, { name: "Another" })).toEqual(
      missing,
    );
    expect(emulator.botMessages(question.id)).toEqual([]);
  });

  it("refuses a message of whitespace alone, as Discord does, unless it carries buttons or files", async () => {
    expect(await post({ content: "\n" })).toEqual({
      status: 400,
      body: { message: "Cannot send an empty message", code: 50006 },
    });
    expect((await post({ content: "  \n\t" })).status).toBe(400);
    const button = { type: 2, style: 4, label: "Stop", custom_id: "sb:r:stop" };
    expect((await post({ content: "\n", components: [{ type: 1, components: [button] }] })).status).toBe(200);
  });

  it("answers past 50 requests a second with a global 429 (global: true, X-RateLimit-Global, retry_after)", async () => {
    // A naive client: @discordjs/rest told it may send 1,000 requests a second, and to fail on any 429.
    const rest = new REST({
      api: emulator.apiUrl,
      globalRequestsPerSecond: 1_000,
      rejectOnRateLimit: () => true,
      retries: 0,
    }).setToken(emulator.token);
    const channels = [emulator.state.general, emulator.state.random, emulator.state.forum];
    // The client's login spent some of this second's budget; start on a fresh one.
    await sleep(1_000);
    const results = await Promise.allSettled(
      Array.from({ length: 60 }, (_, i) => rest.get(Routes.channel(channels[i % 3]!))),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(50);
    const rejected = results.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected.every((e) => e instanceof RateLimitError && e.global)).toBe(true);
    expect(emulator.limiter.hits.some((h) => h.kind === "global")).toBe(true);
    // The raw answer, as Discord shapes it.
    const res = await fetch(`${emulator.apiUrl}/v10/users/@me`, {
      headers: { authorization: `Bot ${emulator.token}` },
    });
    expect(res.status).toBe(429);
    expect(res.headers.get("x-ratelimit-global")).toBe("true");
    expect(res.headers.get("x-ratelimit-scope")).toBe("global");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    const body = (await res.json()) as { global: boolean; retry_after: number };
    expect(body.global).toBe(true);
    expect(body.retry_after).toBeGreaterThan(0);
    expect(body.retry_after).toBeLessThanOrEqual(1);
    // A second later the budget is back (@discordjs/rest adds its own 50 ms offset to the wait).
    await sleep(1_200);
    await expect(rest.get(Routes.user("@me"))).resolves.toMatchObject({ id: emulator.bot.id });
  });

  it("does not count interaction callbacks against the global limit", async () => {
    emulator.limiter.options.globalPerSecond = 1;
    const rec = emulator.slash("help", {}, emulator.state.general, emulator.state.alice.id);
    const i = await waitFor(() => interactions.find((x) => x.id === rec.id));
    if (!i.isChatInputCommand()) throw new Error("not a chat input command");
    await i.reply("no global budget needed");
    await i.followUp("nor here");
    expect(rec.callbacks).toEqual([4]);
    expect(emulator.limiter.hits.filter((h) => h.kind === "global")).toHaveLength(0);
  });

  it("limits thread creation per parent channel, with a shared-scope 429 and no warning headers", async () => {
    await restart({ rateLimits: { speed: 20 } }, { rejectOnRateLimit: true });
    const s = emulator.state;
    const open = (channelId: string, n: number) => {
      const starter = emulator.userMessage(channelId, `question ${n}`, { mentionsBot: true });
      const channel = client.channels.cache.get(channelId) as TextChannel;
      return channel.threads.create({ name: `thread ${n}`, startMessage: starter.id });
    };
    const opened: string[] = [];
    for (let n = 1; n <= 5; n++) opened.push((await open(s.general, n)).name);
    expect(opened).toEqual(["thread 1", "thread 2", "thread 3", "thread 4", "thread 5"]);
    const err = await open(s.general, 6).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err).toMatchObject({ global: false, scope: "shared" });
    // 5 minutes, 20 times faster: the wait is counted in seconds, not milliseconds.
    expect((err as RateLimitError).retryAfter).toBeGreaterThan(10_000);
    expect(emulator.threads(s.general)).toHaveLength(5);
    // Another channel has its own allowance.
    await expect(open(s.random, 7)).resolves.toMatchObject({ name: "thread 7" });
  });

  it("withholds message content from a client without the Message Content intent, except mentions and DMs", async () => {
    await client.destroy();
    messages = [];
    client = await connect({
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages],
    });
    const file = { filename: "notes.txt", contentType: "text/plain", data: Buffer.from("secret") };
    const plain = emulator.userMessage(emulator.state.general, "just chatting", { attachments: [file] });
    const mention = emulator.userMessage(emulator.state.general, "help me", { mentionsBot: true });
    const dm = emulator.dm(emulator.state.bob.id, "a private word");
    const got = (id: string) => waitFor(() => messages.find((m) => m.id === id));
    const [p, m, d] = await Promise.all([got(plain.id), got(mention.id), got(dm.id)]);
    expect(p.content).toBe("");
    expect(p.attachments.size).toBe(0);
    expect(p.embeds).toEqual([]);
    expect(m.content).toBe(`<@${emulator.bot.id}> help me`);
    expect(d.content).toBe("a private word");
    // The bot's own messages always carry their content.
    const own = await general().send("my own words");
    expect((await waitFor(() => messages.find((x) => x.id === own.id))).content).toBe("my own words");
  });

  it("closes the gateway with 4014 when the app identifies with a privileged intent it was not granted", async () => {
    await client.destroy();
    await emulator.stop();
    emulator = await DiscordEmulator.start({ privilegedIntents: 0 });
    const c = new Client({ intents: ALL_INTENTS, rest: { api: emulator.apiUrl } });
    client = c;
    await expect(c.login(emulator.token)).rejects.toThrow(/disallowed intents/i);
    expect(emulator.gateway.connected()).toBe(0);
    // REST reads are stripped as well: the portal setting is what counts there.
    const m = emulator.userMessage(emulator.state.general, "not for you");
    const res = await fetch(`${emulator.apiUrl}/v10/channels/${emulator.state.general}/messages/${m.id}`, {
      headers: { authorization: `Bot ${emulator.token}` },
    });
    expect(((await res.json()) as { content: string }).content).toBe("");
  });

  it("closes the gateway with 4010 when a client identifies as a shard outside its count", async () => {
    const ws = new WebSocket(emulator.gatewayUrl());
    const closed = new Promise<number>((resolve) => ws.on("close", (code) => resolve(code)));
    ws.on("message", (raw) => {
      const frame = JSON.parse(String(raw)) as { op: number };
      // HELLO: a naive client that counts its shards from 1.
      if (frame.op === 10) {
        ws.send(
          JSON.stringify({ op: 2, d: { token: emulator.token, intents: 1, shard: [2, 2], properties: {} } }),
        );
      }
    });
    expect(await closed).toBe(4010);
  });

  it("refuses to edit another user's message with 403 and code 50005", async () => {
    const theirs = emulator.userMessage(emulator.state.general, "alice wrote this");
    const fetched = await general().messages.fetch(theirs.id);
    const err = await fetched.edit("the bot rewrites it").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DiscordAPIError);
    expect(err).toMatchObject({
      status: 403,
      code: 50005,
      message: "Cannot edit a message authored by another user",
    });
    expect(emulator.messages(emulator.state.general)[0]?.content).toBe("alice wrote this");
    expect(emulator.messages(emulator.state.general)[0]?.edits).toEqual([]);
  });

  it("refuses an interaction's initial response after the deadline with 404 Unknown interaction (10062)", async () => {
    await restart({ rateLimits: { speed: 20 }, interactions: { ackMs: 200 } });
    const rec = emulator.slash("ask", { question: "slow?" }, emulator.state.general, emulator.state.alice.id);
    const i = await waitFor(() => interactions.find((x) => x.id === rec.id));
    if (!i.isChatInputCommand()) throw new Error("not a chat input command");
    // A naive handler: does its work first, answers afterwards.
    await sleep(300);
    await expect(i.reply("here you go")).rejects.toMatchObject({
      status: 404,
      code: 10062,
      message: "Unknown interaction",
    });
    expect(rec.callbacks).toEqual([]);
    expect(rec.originalId).toBeUndefined();
  });

  it("takes follow-ups and edits with the token only while it lives, then 401 Invalid Webhook Token (50027)", async () => {
    await restart({ rateLimits: { speed: 20 }, interactions: { tokenTtlMs: 400 } });
    const rec = emulator.slash(
      "ask",
      { question: "long job" },
      emulator.state.general,
      emulator.state.alice.id,
    );
    const i = await waitFor(() => interactions.find((x) => x.id === rec.id));
    if (!i.isChatInputCommand()) throw new Error("not a chat input command");
    await i.deferReply();
    await i.editReply("working on it");
    await sleep(450);
    const expired = { status: 401, code: 50027, message: "Invalid Webhook Token" };
    await expect(i.editReply("finally done")).rejects.toMatchObject(expired);
    await expect(i.followUp("and one more thing")).rejects.toMatchObject(expired);
    expect(emulator.state.findMessage(rec.originalId!)?.content).toBe("working on it");
    expect(rec.followupIds).toEqual([]);
  });
});
