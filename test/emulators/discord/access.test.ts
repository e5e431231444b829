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
