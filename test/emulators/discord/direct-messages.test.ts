import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DiscordEmulator } from "./index.js";

let emulator: DiscordEmulator;
beforeEach(async () => {
  emulator = await DiscordEmulator.start();
});
afterEach(async () => {
  await emulator.stop();
});

/** One raw REST request as the bot, no discord.js: its status and body. */
async function raw(method: string, path: string, body?: Record<string, unknown>) {
  const res = await fetch(`${emulator.apiUrl}/v10${path}`, {
    method,
    headers: { authorization: `Bot ${emulator.token}`, "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
}

/** Opens the bot's DM with `userId` (as discord.js's user.send does first), then posts `content` in it. */
async function directMessage(userId: string, content: string) {
  const opened = await raw("POST", "/users/@me/channels", { recipient_id: userId });
  expect(opened.status).toBe(200);
  return raw("POST", `/channels/${String(opened.body.id)}/messages`, { content });
}

const CANNOT = { status: 403, body: { message: "Cannot send messages to this user", code: 50007 } };

describe("Discord emulator: direct messages the bot sends", () => {
  it("reach a member of the guild who takes DMs", async () => {
    const sent = await directMessage(emulator.state.alice.id, "hello");
    expect(sent.status).toBe(200);
    expect(emulator.botMessages(String(sent.body.channel_id)).map((m) => m.content)).toEqual(["hello"]);
  });

  it("are refused with 50007 to someone who closed their DMs, and to a bot; the DM channel still opens", async () => {
    const s = emulator.state;
    s.dmsClosed.add(s.bob.id);
    expect(await directMessage(s.bob.id, "hello")).toEqual(CANNOT);
    expect(await directMessage(s.otherBot.id, "hello")).toEqual(CANNOT);
    // Nothing was written, and alice, who takes DMs, is not concerned.
    expect(emulator.botMessages(s.dmChannel(s.bob.id).id)).toEqual([]);
    expect((await directMessage(s.alice.id, "hello")).status).toBe(200);
  });

  it("are refused with 50278 to someone who shares no guild with the bot", async () => {
    const s = emulator.state;
    s.outsiders.add(s.bob.id);
    expect(await directMessage(s.bob.id, "hello")).toEqual({
      status: 403,
      body: { message: "Cannot send messages to this user due to having no mutual guilds", code: 50278 },
    });
  });
});
