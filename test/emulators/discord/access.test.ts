import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { boostGuild } from "./guild.js";
import { DiscordEmulator } from "./index.js";
import { archiveThread, lockThread } from "./threads.js";

let emulator: DiscordEmulator;
beforeEach(async () => {
  emulator = await DiscordEmulator.start();
});
afterEach(async () => {
  await emulator.stop();
});

/** A naive client: one raw REST request as the bot, no discord.js. */
async function raw(method: string, path: string, body?: Record<string, unknown>) {
  const res = await fetch(`${emulator.apiUrl}/v10${path}`, {
    method,
    headers: { authorization: `Bot ${emulator.token}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
}

/** A thread opened by the bot under a question in #random, with the bot's first message in it. */
async function threadWithAnswer(): Promise<{ thread: string; answer: string }> {
  const random = emulator.state.random;
  const question = emulator.userMessage(random, "a question");
  expect(
    (await raw("POST", `/channels/${random}/messages/${question.id}/threads`, { name: "Q" })).status,
  ).toBe(201);
  const answer = await raw("POST", `/channels/${question.id}/messages`, { content: "an answer" });
  return { thread: question.id, answer: String(answer.body.id) };
}

describe("Discord emulator: places closed to the bot", () => {
  it("answers every request of a channel the bot may not see, and of its threads, with 403 Missing Access (50001)", async () => {
    const { thread, answer } = await threadWithAnswer();
    emulator.denyBot(emulator.state.random, "VIEW_CHANNEL");
    const missing = { status: 403, body: { message: "Missing Access", code: 50001 } };
    expect(await raw("GET", `/channels/${emulator.state.random}`)).toEqual(missing);
    expect(await raw("GET", `/channels/${thread}/messages`)).toEqual(missing);
    expect(await raw("POST", `/channels/${thread}/messages`, { content: "more" })).toEqual(missing);
    expect(await raw("PATCH", `/channels/${thread}/messages/${answer}`, { content: "edited" })).toEqual(
      missing,
    );
    // Another channel is not concerned.
    expect((await raw("GET", `/channels/${emulator.state.general}`)).status).toBe(200);
  });

  it("refuses edits and deletes in an archived thread with 50083, and reopens it for a new message unless it is locked", async () => {
    const { thread, answer } = await threadWithAnswer();
    archiveThread(emulator, thread);
    const archived = { status: 400, body: { message: "Thread is archived", code: 50083 } };
    expect(await raw("PATCH", `/channels/${thread}/messages/${answer}`, { content: "edited" })).toEqual(
      archived,
    );
    expect(await raw("DELETE", `/channels/${thread}/messages/${answer}`)).toEqual(archived);
    expect((await raw("POST", `/channels/${thread}/messages`, { content: "more" })).status).toBe(200);
    expect(emulator.state.channels.get(thread)?.thread_metadata?.archived).toBe(false);
    expect((await raw("PATCH", `/channels/${thread}/messages/${answer}`, { content: "edited" })).status).toBe(
      200,
    );
    archiveThread(emulator, thread, { locked: true });
    expect(await raw("POST", `/channels/${thread}/messages`, { content: "again" })).toEqual(archived);
    expect(emulator.botMessages(thread).map((m) => m.content)).toEqual(["edited", "more"]);
  });
});

/** A message with one file, as discord.js sends it: multipart, `payload_json` and `files[0]`. */
async function upload(method: "POST" | "PATCH", path: string, bytes: number, on = emulator) {
  const form = new FormData();
  form.append("payload_json", JSON.stringify({ content: "a file", attachments: [{ id: 0 }] }));
  form.append("files[0]", new Blob([new Uint8Array(bytes)], { type: "image/png" }), "chart.png");
  const res = await fetch(`${on.apiUrl}/v10${path}`, {
    method,
    headers: { authorization: `Bot ${on.token}` },
    body: form,
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
}

describe("Discord emulator: what the bot's permissions and the guild's boosts allow", () => {
  const missing = { status: 403, body: { message: "Missing Permissions", code: 50013 } };

  it("refuses files without Attach Files and embeds without Embed Links with 50013, in the channel and its threads", async () => {
    const { thread, answer } = await threadWithAnswer();
    emulator.denyBot(emulator.state.random, "ATTACH_FILES", "EMBED_LINKS");
    expect(await upload("POST", `/channels/${thread}/messages`, 10)).toEqual(missing);
    expect(await upload("PATCH", `/channels/${thread}/messages/${answer}`, 10)).toEqual(missing);
    expect(await raw("POST", `/channels/${thread}/messages`, { embeds: [{ description: "x" }] })).toEqual(
      missing,
    );
    expect((await raw("POST", `/channels/${thread}/messages`, { content: "text is fine" })).status).toBe(200);
    expect((await upload("POST", `/channels/${emulator.state.general}/messages`, 10)).status).toBe(200);
  });

  it("takes files up to the guild's limit, which its boosts raise, and answers 413 (40005) past it", async () => {
    const limited = await DiscordEmulator.start({ maxFileBytes: 1_000 });
    try {
      const path = `/channels/${limited.state.general}/messages`;
      const send = (bytes: number) => upload("POST", path, bytes, limited);
      expect((await send(1_000)).status).toBe(200);
      expect(await send(1_001)).toEqual({
        status: 413,
        body: { message: "Request entity too large", code: 40005 },
      });
      boostGuild(limited, 2);
      expect((await send(5_000)).status).toBe(200);
      expect((await send(5_001)).status).toBe(413);
    } finally {
      await limited.stop();
    }
  });

  it("refuses the bot's posts in a locked thread that is still open with 403 160005, unless it manages threads", async () => {
    const { thread } = await threadWithAnswer();
    lockThread(emulator, thread);
    expect(await raw("POST", `/channels/${thread}/messages`, { content: "more" })).toEqual({
      status: 403,
      body: { message: "Thread is locked", code: 160005 },
    });
    emulator.grantBot("MANAGE_THREADS");
    expect((await raw("POST", `/channels/${thread}/messages`, { content: "more" })).status).toBe(200);
  });

  it("sends the bot's managed role, role overwrites for what it was denied, and role mentions", async () => {
    const s = emulator.state;
    emulator.denyBot(s.general, "ATTACH_FILES");
    const guild = s.guildCreate() as {
      roles: Record<string, unknown>[];
      channels: Record<string, unknown>[];
    };
    expect(guild.roles.find((r) => r.id === s.botRoleId)).toMatchObject({
      name: "Switchboard",
      managed: true,
      tags: { bot_id: s.bot.id },
    });
    // @everyone grants no Manage Threads and is no administrator (1 << 3).
    const everyone = BigInt(String(guild.roles.find((r) => r.id === s.guildId)?.permissions));
    expect(everyone & ((1n << 34n) | (1n << 3n))).toBe(0n);
    expect(guild.channels.find((c) => c.id === s.general)?.permission_overwrites).toEqual([
      { id: s.botRoleId, type: 0, allow: "0", deny: String(1n << 15n) },
    ]);
    expect(s.member(s.bot).roles).toEqual([s.botRoleId]);
    const msg = emulator.userMessage(s.general, "hello", { mentionsBotRole: true });
    expect(s.messageJson(msg)).toMatchObject({
      content: `<@&${s.botRoleId}> hello`,
      mention_roles: [s.botRoleId],
    });
  });
});
