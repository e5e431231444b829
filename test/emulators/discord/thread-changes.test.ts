import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DiscordEmulator } from "./index.js";
import { archiveThread } from "./threads.js";

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

/** A thread the bot opened under a question in #general. */
async function botThread(): Promise<string> {
  const general = emulator.state.general;
  const question = emulator.userMessage(general, "a question");
  expect(
    (await raw("POST", `/channels/${general}/messages/${question.id}/threads`, { name: "Q" })).status,
  ).toBe(201);
  return question.id;
}

const refused = { status: 403, body: { message: "Missing Permissions", code: 50013 } };

describe("Discord emulator: deleting and archiving threads", () => {
  it("deletes a thread only with Manage Threads, which its creator needs too", async () => {
    const thread = await botThread();
    expect(await raw("DELETE", `/channels/${thread}`)).toEqual(refused);
    expect(emulator.channel(thread)).toBeDefined();
    emulator.grantBot("MANAGE_THREADS");
    expect(await raw("DELETE", `/channels/${thread}`)).toMatchObject({ status: 200, body: { id: thread } });
    expect(emulator.channel(thread)).toBeUndefined();
    expect((await raw("GET", `/channels/${thread}/messages`)).status).toBe(404);
    expect(await raw("DELETE", `/channels/${emulator.state.general}`)).toEqual(refused);
  });

  it("lets the creator archive its thread, and locking or archiving another's takes Manage Threads", async () => {
    const thread = await botThread();
    expect(await raw("PATCH", `/channels/${thread}`, { locked: true })).toEqual(refused);
    expect(await raw("PATCH", `/channels/${thread}`, { archived: true })).toMatchObject({
      status: 200,
      body: { thread_metadata: { archived: true, locked: false } },
    });
    // Archived, it takes only its reopening.
    expect(await raw("PATCH", `/channels/${thread}`, { name: "Renamed" })).toMatchObject({
      status: 400,
      body: { code: 50083 },
    });
    expect((await raw("PATCH", `/channels/${thread}`, { archived: false })).status).toBe(200);
    const theirs = emulator.existingThread(emulator.state.general, "Theirs", [
      { author: emulator.state.alice, content: "hi" },
    ]);
    expect(await raw("PATCH", `/channels/${theirs.id}`, { archived: true })).toEqual(refused);
    emulator.grantBot("MANAGE_THREADS");
    expect((await raw("PATCH", `/channels/${theirs.id}`, { archived: true, locked: true })).status).toBe(200);
  });

  it("reopens a locked thread only for a bot with Manage Threads", async () => {
    const thread = await botThread();
    archiveThread(emulator, thread, { locked: true });
    expect(await raw("PATCH", `/channels/${thread}`, { archived: false })).toEqual(refused);
    expect((await raw("POST", `/channels/${thread}/messages`, { content: "more" })).status).toBe(400);
    emulator.grantBot("MANAGE_THREADS");
    expect((await raw("POST", `/channels/${thread}/messages`, { content: "more" })).status).toBe(200);
  });
});
