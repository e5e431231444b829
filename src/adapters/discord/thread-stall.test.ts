import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/emulators/discord/index.js";
import { answer, type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";
import { lateThreadNote } from "./late-threads.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const THREADS = "POST /channels/:id/messages/:id/threads";

/**
 * A bot whose discord.js gives a request up after `ms` (15 s by default), with Discord
 * taking thread creations and never answering them: Node's fetch would wait 300 s.
 */
async function stalledThreads(text: string, ms = 1_000): Promise<Harness> {
  const harness = await startHarness({ runner: new ScriptedRunner(answer(text)) });
  harness.adapter.client.rest.options.timeout = ms;
  harness.emulator.stalled.add(THREADS);
  return harness;
}

/**
 * The same bot, with Discord slow rather than stalled: it opens the thread `lateMs` after
 * the request, answering then (to a bot long gone) or, `answered: false`, never.
 */
async function lateThreads(text: string, lateMs: number, o: { answered?: boolean } = {}): Promise<Harness> {
  const harness = await stalledThreads(text);
  if (o.answered !== false) harness.emulator.stalled.clear();
  harness.emulator.slow.set(THREADS, lateMs);
  return harness;
}

/** The bot's DELETE of a channel, as the emulator answered it. */
const deleted = (x: Harness, id: string) =>
  x.emulator.requests.find((r) => r.method === "DELETE" && r.path.endsWith(`/channels/${id}`));

describe("Discord adapter: a thread Discord never answers the opening of", () => {
  it("is given up after discord.js's request timeout, and a mention is answered in the channel", async () => {
    h = await stalledThreads("Answered in the channel.");
    const s = h.emulator.state;
    const asked = h.emulator.userMessage(s.general, "are you there?", { mentionsBot: true });
    // Within waitFor's 10 s, where the stalled request would hold every write for 300 s.
    const answered = await waitFor(() =>
      h!.emulator.botMessages(s.general).find((m) => m.content === "Answered in the channel."),
    );
    expect(answered.replyTo).toBe(asked.id);
    expect(h.emulator.threads(s.general)).toEqual([]);
  });

  it("answers an /ask under the question it shows", async () => {
    h = await stalledThreads("Answered in place.");
    const s = h.emulator.state;
    const rec = h.emulator.slash("ask", { question: "still there?" }, s.general, s.alice.id);
    await waitFor(() => s.findMessage(rec.followupIds[0] ?? "")?.content === "Answered in place.");
    expect(s.findMessage(rec.originalId!)?.content).toBe("**alice** asked: still there?");
    expect(h.emulator.threads(s.general)).toEqual([]);
  });
});

describe("Discord adapter: a thread Discord opens after the bot gave its opening up", () => {
  it("is deleted once it appears, where the bot may manage threads, the answer left in the channel", async () => {
    h = await lateThreads("Answered in the channel.", 1_500);
    h.emulator.grantBot("MANAGE_THREADS");
    const s = h.emulator.state;
    const asked = h.emulator.userMessage(s.general, "are you there?", { mentionsBot: true });
    const answered = await waitFor(() =>
      h!.emulator.botMessages(s.general).find((m) => m.content === "Answered in the channel."),
    );
    expect(answered.replyTo).toBe(asked.id);
    expect(await waitFor(() => deleted(h!, asked.id))).toMatchObject({ status: 200 });
    expect(h.emulator.threads(s.general)).toEqual([]);
  });

  it("is archived with a line saying where the answer is, where the bot may not delete it (an /ask)", async () => {
    h = await lateThreads("Answered in place.", 1_500);
    const s = h.emulator.state;
    const rec = h.emulator.slash("ask", { question: "still there?" }, s.general, s.alice.id);
    await waitFor(() => s.findMessage(rec.followupIds[0] ?? "")?.content === "Answered in place.");
    const thread = await waitFor(() =>
      h!.emulator.threads(s.general).find((t) => t.thread_metadata?.archived === true),
    );
    expect(thread.id).toBe(rec.originalId);
    expect(h.emulator.botMessages(thread.id).map((m) => m.content)).toEqual([lateThreadNote(s.general)]);
    // Its role's permissions say it lacks Manage Threads: no DELETE is tried.
    expect(deleted(h, thread.id)).toBeUndefined();
  });

  it("takes the answer when it appeared before the bot gave up, though Discord never answered", async () => {
    h = await lateThreads("Answered in the thread.", 200, { answered: false });
    const s = h.emulator.state;
    const asked = h.emulator.userMessage(s.general, "are you there?", { mentionsBot: true });
    await waitFor(() =>
      h!.emulator.botMessages(asked.id).find((m) => m.content === "Answered in the thread."),
    );
    expect(h.emulator.botMessages(s.general)).toEqual([]);
  });
});
