import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DiscordEmulator } from "./index.js";

let emulator: DiscordEmulator;
beforeEach(async () => {
  emulator = await DiscordEmulator.start();
});
afterEach(async () => {
  await emulator.stop();
});

/** One raw REST request as the bot; `ms` after which the client gives up. */
async function raw(path: string, body: Record<string, unknown>, ms = 2_000) {
  const res = await fetch(`${emulator.apiUrl}/v10${path}`, {
    method: "POST",
    headers: { authorization: `Bot ${emulator.token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(ms),
  });
  return res.status;
}

describe("Discord emulator: a stalled route", () => {
  it("never answers it and does nothing for it, while the other routes answer as ever", async () => {
    const general = emulator.state.general;
    emulator.stalled.add("POST /channels/:id/messages/:id/threads");
    const question = emulator.userMessage(general, "a question");
    await expect(
      raw(`/channels/${general}/messages/${question.id}/threads`, { name: "Q" }, 300),
    ).rejects.toMatchObject({ name: "TimeoutError" });
    expect(emulator.threads(general)).toEqual([]);
    expect(await raw(`/channels/${general}/messages`, { content: "still here" })).toBe(200);

    emulator.stalled.clear();
    expect(await raw(`/channels/${general}/messages/${question.id}/threads`, { name: "Q" })).toBe(201);
    expect(emulator.threads(general)).toHaveLength(1);
  });
});

describe("Discord emulator: a slow route", () => {
  const THREADS = "POST /channels/:id/messages/:id/threads";

  it("carries the request out late, after a client that gave up is gone, and answers one that waited", async () => {
    const general = emulator.state.general;
    emulator.slow.set(THREADS, 400);
    const first = emulator.userMessage(general, "first");
    await expect(
      raw(`/channels/${general}/messages/${first.id}/threads`, { name: "Q" }, 100),
    ).rejects.toMatchObject({ name: "TimeoutError" });
    expect(emulator.threads(general)).toEqual([]);
    await new Promise((r) => setTimeout(r, 500));
    expect(emulator.threads(general).map((t) => t.id)).toEqual([first.id]);
    const second = emulator.userMessage(general, "second");
    expect(await raw(`/channels/${general}/messages/${second.id}/threads`, { name: "Q" })).toBe(201);
  });

  it("also stalled, carries it out late and never answers", async () => {
    const general = emulator.state.general;
    emulator.slow.set(THREADS, 100);
    emulator.stalled.add(THREADS);
    const question = emulator.userMessage(general, "a question");
    await expect(
      raw(`/channels/${general}/messages/${question.id}/threads`, { name: "Q" }, 600),
    ).rejects.toMatchObject({ name: "TimeoutError" });
    expect(emulator.threads(general).map((t) => t.id)).toEqual([question.id]);
  });
});
