import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/emulators/discord/index.js";
import type { Inbound } from "../../runtime/contract.js";
import { joinParts } from "../../runtime/split.js";
import { FOLDED_NOTE } from "./followup-fold.js";
import { answer, type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const SIGN_IN = {
  ref: "q1",
  text: "Approve the call?",
  choices: [{ value: "yes", label: "Approve", style: "primary" as const }],
};
const OVERTAKEN = "Not run: you wrote again before anyone decided.";

/**
 * A first turn asks a question and waits; the person's next turn, an /ask in the same
 * conversation, settles it, as the approvals desk does when someone writes again.
 */
async function overtaken(first: (x: Harness, dm: string) => void) {
  let question = "";
  const failures: unknown[] = [];
  const runner = new ScriptedRunner(async (inbound: Inbound) => {
    if (!question) {
      question = await inbound.reply.ask!(SIGN_IN);
      return;
    }
    await inbound.reply.settle!(question, OVERTAKEN).catch((err: unknown) => failures.push(err));
    await answer("On with the new question.")(inbound);
  });
  h = await startHarness({ runner });
  const s = h.emulator.state;
  const dm = s.dmChannel(s.bob.id).id;
  first(h, dm);
  await waitFor(() => runner.done.length === 1, { timeoutMs: 20_000 });
  const later = h.emulator.slash("ask", { question: "something else" }, dm, s.bob.id);
  await waitFor(() => runner.done.length === 2, { timeoutMs: 20_000 });
  const settled = s.findMessage(question)!;
  return { settled, failures, later, harness: h };
}

describe("Discord adapter: an /ask edits through its token only the messages its token wrote", () => {
  it("settles, through the channel, a question a DM's answer posted there", async () => {
    const { settled, failures, later, harness } = await overtaken((x) =>
      x.emulator.dm(x.emulator.state.bob.id, "deploy it"),
    );
    expect(settled.interactionId).toBeUndefined();
    expect(failures).toEqual([]);
    expect([settled.content, settled.components]).toEqual([OVERTAKEN, []]);
    expect(harness.emulator.state.findMessage(later.originalId!)?.content).toBe("On with the new question.");
    expect(harness.emulator.requests.filter((r) => r.status === 404)).toEqual([]);
  });

  it("settles, through the channel, a question an earlier /ask's token posted", async () => {
    let first = "";
    const { settled, failures, later, harness } = await overtaken((x, dm) => {
      first = x.emulator.slash("ask", { question: "deploy it" }, dm, x.emulator.state.bob.id).id;
    });
    expect(settled.interactionId).toBe(first);
    expect(failures).toEqual([]);
    expect([settled.content, settled.components]).toEqual([OVERTAKEN, []]);
    expect(harness.emulator.state.findMessage(later.originalId!)?.content).toBe("On with the new question.");
    expect(harness.emulator.requests.filter((r) => r.status === 404)).toEqual([]);
  });
});

describe("Discord adapter: a long /ask answered through its token", () => {
  it("sends one follow-up per part past five in the bot's DM: a server install's interactions have no cap", async () => {
    const text = Array.from({ length: 7 }, (_, i) => `Part ${i}: ${"words and more words ".repeat(90)}`).join(
      "\n\n",
    );
    h = await startHarness({ runner: new ScriptedRunner(answer(text, { chunk: 4_000 })) });
    const s = h.emulator.state;
    const dm = s.dmChannel(s.bob.id).id;
    const rec = h.emulator.slash("ask", { question: "the long version?" }, dm, s.bob.id);
    await waitFor(() => h!.runner.done.length === 1, { timeoutMs: 20_000 });
    // Discord caps follow-ups at 5 only where a user install alone authorized the interaction.
    expect(rec.owners).toEqual({ "0": "0" });
    expect(rec.followupIds.length).toBeGreaterThan(5);
    expect(joinParts(h.emulator.botMessages(dm).map((m) => m.content))).toBe(text);
    expect(h.emulator.requests.filter((r) => r.status >= 400)).toEqual([]);
  });
});

describe("Discord adapter: a long /ask of an app a user install alone authorized", () => {
  /** Where a user install alone authorizes an /ask: the bot's DM, or a group DM the bot is not in. */
  const places = {
    "the bot's DM, the app installed to the person only": (x: Harness) => {
      x.emulator.state.installs = { guild: false, user: true };
      return x.emulator.state.dmChannel(x.emulator.state.bob.id).id;
    },
    "a group DM without the bot, the app installed to the server too": (x: Harness) => {
      const s = x.emulator.state;
      s.installs = { guild: true, user: true };
      return x.emulator.privateChannel(s.alice, s.bob).id;
    },
  };

  for (const [where, place] of Object.entries(places)) {
    it(`folds what five follow-ups cannot hold into answer.md on the last one, losing no text: ${where}`, async () => {
      const text = Array.from(
        { length: 9 },
        (_, i) => `Part ${i}: ${"words and more words ".repeat(90)}`,
      ).join("\n\n");
      h = await startHarness({ runner: new ScriptedRunner(answer(text, { chunk: 4_000 })) });
      const s = h.emulator.state;
      const channel = place(h);
      const rec = h.emulator.slash("ask", { question: "the long version?" }, channel, s.bob.id);
      await waitFor(() => h!.runner.done.length === 1, { timeoutMs: 20_000 });
      expect(rec.owners).toEqual({ "1": s.bob.id });
      expect(h.emulator.requests.filter((r) => r.status >= 400)).toEqual([]);
      expect(rec.followupIds).toHaveLength(5);
      const messages = h.emulator.botMessages(channel);
      expect(messages.map((m) => m.id)).toEqual([rec.originalId, ...rec.followupIds]);
      const last = messages.at(-1)!;
      expect(last.content.endsWith(FOLDED_NOTE)).toBe(true);
      expect(last.attachments.map((a) => a.filename)).toEqual(["answer.md"]);
      const shown = last.content.slice(0, -FOLDED_NOTE.length).replace(/\n$/, "");
      const file = last.attachments[0]!.data.toString("utf8");
      const contents = [...messages.slice(0, -1).map((m) => m.content), shown];
      expect(joinParts(contents) + file).toBe(text);
    });
  }

  it("streams on into answer.md, the last message ending with the rating and the answer's file", async () => {
    const text = Array.from({ length: 8 }, (_, i) => `Line ${i}: ${"streamed words ".repeat(120)}`).join(
      "\n",
    );
    const png = { title: "chart", filename: "chart.png", mimeType: "image/png", bytes: new Uint8Array(64) };
    let uploaded: Promise<void> | undefined;
    const runner = new ScriptedRunner(async (inbound) => {
      inbound.reply.offerStop?.("stop2");
      inbound.reply.offerFeedback?.("rate2");
      const sink = inbound.reply.stream();
      for (let i = 0; i < text.length; i += 600) {
        sink.write(text.slice(i, i + 600));
        if (i === 9_000) uploaded = inbound.reply.upload(png);
        await new Promise((r) => setTimeout(r, 40));
      }
      await sink.finish({ answered: true });
      await uploaded;
    });
    h = await startHarness({ runner });
    const s = h.emulator.state;
    s.installs = { guild: false, user: true };
    const dm = s.dmChannel(s.bob.id).id;
    const rec = h.emulator.slash("ask", { question: "stream it" }, dm, s.bob.id);
    await waitFor(() => runner.done.length === 1, { timeoutMs: 20_000 });
    const lastId = rec.followupIds.at(-1) ?? "";
    await waitFor(() => JSON.stringify(s.findMessage(lastId)?.components ?? []).includes("rate2"));
    expect(h.emulator.requests.filter((r) => r.status >= 400)).toEqual([]);
    expect(rec.followupIds).toHaveLength(5);
    const messages = h.emulator.botMessages(dm);
    const last = messages.at(-1)!;
    expect(JSON.stringify(last.components)).not.toContain("stop2");
    expect(last.attachments.map((a) => a.filename)).toEqual(["answer.md", "chart.png"]);
    const shown = last.content.slice(0, -FOLDED_NOTE.length).replace(/\n$/, "");
    const file = last.attachments[0]!.data.toString("utf8");
    expect(joinParts([...messages.slice(0, -1).map((m) => m.content), shown]) + file).toBe(text);
  });
});
