import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/emulators/discord/index.js";
import { answer, type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

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
