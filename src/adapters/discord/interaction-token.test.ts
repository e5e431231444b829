import { afterEach, describe, expect, it, vi } from "vitest";
import { DiscordEmulator, type StoredInteraction, waitFor } from "../../../test/emulators/discord/index.js";
import { log } from "../../log.js";
import { joinParts } from "../../runtime/split.js";
import { answer, type Harness, type Script, ScriptedRunner, startHarness } from "./harness.test-helper.js";
import { ANSWER_BELOW, NOT_SENT_PRIVATELY, SENT_PRIVATELY } from "./interaction-place.js";

let h: Harness | undefined;
let own: DiscordEmulator | undefined;

afterEach(async () => {
  vi.restoreAllMocks();
  await h?.close();
  h = undefined;
  await own?.stop();
  own = undefined;
});

/** The interaction's 15 minutes pass, for the emulator (the adapter goes by the clock, and learns it from Discord). */
const tokenEnds = (x: Harness, rec: StoredInteraction | undefined) =>
  x.emulator.state.ageInteraction(rec!.id, x.emulator.interactionTokenTtlMs);
const FIRST = "Started while the token lived. ";
const REST = `${"And it goes on long after it. ".repeat(90).trim()} The end.`;
/** A notice for the asker alone. */
const BUDGET = "You have used your daily budget of 4,000 tokens. It renews at midnight UTC.";

async function harness(script: Script): Promise<Harness> {
  own = await DiscordEmulator.start({ rateLimits: { speed: 10 } });
  h = await startHarness({ emulator: own, runner: new ScriptedRunner(script) });
  return h;
}

/** A thread someone else opened, known to the bot, where /ask answers through the interaction. */
async function thread(x: Harness): Promise<string> {
  const s = x.emulator.state;
  const t = x.emulator.existingThread(s.general, "ops", [{ author: s.bob, content: "anyone?" }]);
  await waitFor(() => x.adapter.client.channels.cache.get(t.id));
  return t.id;
}

const shown = (x: Harness, rec: () => StoredInteraction | undefined, start: string) =>
  waitFor(() => x.emulator.state.findMessage(rec()?.originalId ?? "")?.content.startsWith(start));

/** The bot's requests after `from`, as method and path with ids as `#`. */
const requestsSince = (x: Harness, from: number) =>
  x.emulator.requests.slice(from).map((r) => {
    const path = r.path.replace("/v10", "").replace(/\/webhooks\/\d+\/[^/]+/, "/webhooks/#/#");
    return `${r.status} ${r.method} ${path.replace(/\d{15,}/g, "#")}`;
  });

describe("Discord adapter: an /ask answer that outlives the interaction's token", () => {
  it("goes on in a thread through the channel's endpoints: the same message edited, the rest posted, nothing twice", async () => {
    let rec: StoredInteraction | undefined;
    const x = await harness(async (inbound) => {
      const sink = inbound.reply.stream();
      sink.write(FIRST);
      await shown(x, () => rec, FIRST);
      tokenEnds(x, rec);
      sink.write(REST);
      await sink.finish();
    });
    const t = await thread(x);
    rec = x.emulator.slash("ask", { question: "a long job?" }, t, x.emulator.state.alice.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    const messages = x.emulator.botMessages(t);
    expect(messages[0]?.id).toBe(rec.originalId);
    expect(messages.length).toBe(2);
    expect(joinParts(messages.map((m) => m.content))).toBe(FIRST + REST);
    expect(rec.followupIds).toEqual([]);
    // Discord refused the token once; every later write went through the thread.
    const refusals = x.emulator.requests.filter((r) => r.status === 401);
    expect(refusals).toHaveLength(1);
    const after = x.emulator.requests.filter((r) => r.at > refusals[0]!.at && r.method !== "GET");
    expect(after.every((r) => r.path.includes(`/channels/${t}/`))).toBe(true);
  });

  it("fills the deferred reply through the DM when the token ended before any of it was shown", async () => {
    let rec: StoredInteraction | undefined;
    const x = await harness(async (inbound) => {
      tokenEnds(x, rec);
      const sink = inbound.reply.stream();
      sink.write("Only now, after a long tool run.");
      await sink.finish();
    });
    const s = x.emulator.state;
    const dm = s.dmChannel(s.bob.id);
    rec = x.emulator.slash("ask", { question: "slow tools?" }, dm.id, s.bob.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    const texts = x.emulator.botMessages(dm.id).map((m) => [m.id === rec?.originalId, m.content]);
    // The "thinking…" Discord shows is edited by its id, as any message of the bot.
    expect(texts).toEqual([[true, "Only now, after a long tool run."]]);
    expect(rec.followupIds).toEqual([]);
  });

  it("posts the answer under a line mentioning the asker when the deferred reply cannot be edited any more", async () => {
    let rec: StoredInteraction | undefined;
    const x = await harness(async (inbound) => {
      tokenEnds(x, rec);
      // Someone deleted the "thinking…" message meanwhile.
      x.emulator.state.findMessage(rec!.originalId!)!.deleted = true;
      const sink = inbound.reply.stream();
      sink.write("Here, at last.");
      await sink.finish();
    });
    const t = await thread(x);
    const s = x.emulator.state;
    rec = x.emulator.slash("ask", { question: "still there?" }, t, s.alice.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    const shownNow = x.emulator.botMessages(t).filter((m) => !m.deleted);
    expect(shownNow.map((m) => m.content)).toEqual([`<@${s.alice.id}> ${ANSWER_BELOW}`, "Here, at last."]);
    expect(shownNow[0]?.allowedMentions).toEqual({ parse: [], users: [s.alice.id] });
    expect(shownNow[1]?.allowedMentions).toEqual({ parse: [] });
  });

  it("answers an /ask in place under the question it shows, never over it, once the token ended", async () => {
    let rec: StoredInteraction | undefined;
    const x = await harness(async (inbound) => {
      tokenEnds(x, rec);
      const sink = inbound.reply.stream();
      sink.write(REST);
      await sink.finish();
    });
    const s = x.emulator.state;
    x.emulator.denyBot(s.general, "CREATE_PUBLIC_THREADS");
    rec = x.emulator.slash("ask", { question: "in place?" }, s.general, s.alice.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    const echo = s.findMessage(rec.originalId!)!;
    expect([echo.content, echo.edits]).toEqual(["**alice** asked: in place?", [""]]);
    const answer = x.emulator.botMessages(s.general).filter((m) => m.id !== echo.id);
    expect(joinParts(answer.map((m) => m.content))).toBe(REST);
    expect(answer.map((m) => m.replyTo)).toEqual([echo.id, undefined]);
  });

  it("asks a question and settles it through the channel once the token is over", async () => {
    let rec: StoredInteraction | undefined;
    const x = await harness(async (inbound) => {
      const sink = inbound.reply.stream();
      sink.write("Before the sign-in. ");
      await shown(x, () => rec, "Before");
      tokenEnds(x, rec);
      const question = await inbound.reply.ask!({
        ref: "q1",
        text: "Sign in to go on.",
        choices: [{ value: "done", label: "Done", style: "primary" }],
      });
      await inbound.reply.settle!(question, "Signed in.");
      sink.write("After the sign-in.");
      await sink.finish();
    });
    const t = await thread(x);
    rec = x.emulator.slash("ask", { question: "connect?" }, t, x.emulator.state.alice.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    const texts = x.emulator.botMessages(t).map((m) => m.content);
    expect(texts).toEqual(["Before the sign-in. After the sign-in.", "Signed in."]);
    expect(rec.followupIds).toEqual([]);
  });

  it("moves to the channel shortly before the token's end, so Discord refuses nothing", async () => {
    let rec: StoredInteraction | undefined;
    let from = 0;
    const real = Date.now.bind(Date);
    const x = await harness(async (inbound) => {
      const sink = inbound.reply.stream();
      sink.write(FIRST);
      await shown(x, () => rec, FIRST);
      // Fourteen minutes and 45 seconds later: the token still works, but not for long.
      vi.spyOn(Date, "now").mockImplementation(() => real() + 14 * 60_000 + 45_000);
      from = x.emulator.requests.length;
      sink.write("Still going.");
      await sink.finish();
    });
    const t = await thread(x);
    rec = x.emulator.slash("ask", { question: "how long?" }, t, x.emulator.state.alice.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    expect(x.emulator.botMessages(t).map((m) => m.content)).toEqual([`${FIRST}Still going.`]);
    const since = requestsSince(x, from);
    expect(since).toContain(`200 PATCH /api/channels/#/messages/#`);
    expect(since.filter((r) => r.includes("/webhooks/"))).toEqual([]);
    expect(x.emulator.requests.filter((r) => r.status === 401)).toEqual([]);
  });

  it("tells a late notice of an /ask answered in the thread it opened to the asker by DM, never in the thread", async () => {
    let rec: StoredInteraction | undefined;
    const x = await harness(async (inbound) => {
      await answer("The answer.")(inbound);
      tokenEnds(x, rec);
      await inbound.reply.notice(BUDGET);
    });
    const s = x.emulator.state;
    rec = x.emulator.slash("ask", { question: "and then?" }, s.general, s.alice.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    expect(x.emulator.botMessages(rec.originalId!).map((m) => m.content)).toEqual(["The answer."]);
    expect(x.emulator.botMessages(s.dmChannel(s.alice.id).id).map((m) => m.content)).toEqual([
      `About what you asked in <#${s.general}>:\n${BUDGET}`,
    ]);
  });

  it("tells a late notice of an /ask answered in place to the asker by DM: the channel keeps the question alone", async () => {
    let rec: StoredInteraction | undefined;
    const x = await harness(async (inbound) => {
      tokenEnds(x, rec);
      await inbound.reply.notice(BUDGET);
    });
    const s = x.emulator.state;
    x.emulator.denyBot(s.general, "CREATE_PUBLIC_THREADS");
    rec = x.emulator.slash("ask", { question: "in place?" }, s.general, s.alice.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    expect(x.emulator.botMessages(s.general).map((m) => m.content)).toEqual(["**alice** asked: in place?"]);
    expect(x.emulator.botMessages(s.dmChannel(s.alice.id).id).map((m) => m.content)).toEqual([
      `About what you asked in <#${s.general}>:\n${BUDGET}`,
    ]);
  });

  it("drops a late notice, with a warning, for an asker who takes no DMs; it is never said in the thread", async () => {
    const warn = vi.spyOn(log, "warn");
    let rec: StoredInteraction | undefined;
    const x = await harness(async (inbound) => {
      tokenEnds(x, rec);
      await inbound.reply.notice(BUDGET);
    });
    const s = x.emulator.state;
    s.dmsClosed.add(s.bob.id);
    const t = await thread(x);
    rec = x.emulator.slash("ask", { question: "over budget?" }, t, s.bob.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    expect(x.emulator.messages(t).some((m) => m.content.includes(BUDGET))).toBe(false);
    expect(s.findMessage(rec.originalId!)?.content).toBe(NOT_SENT_PRIVATELY);
    expect(x.emulator.botMessages(s.dmChannel(s.bob.id).id)).toEqual([]);
    expect(x.emulator.requests.filter((r) => r.status === 403).map((r) => r.method)).toEqual(["POST"]);
    expect(warn.mock.calls.map((c) => c[1])).toContain(
      "Discord would not deliver a direct message to this person; not sent",
    );
  });
});

describe('Discord adapter: the "thinking…" reply of an /ask that gets a notice or a question before any answer', () => {
  /** The bot's messages in `channel`: whether each is the deferred reply, its text and its buttons' labels. */
  const shownIn = (x: Harness, channel: string, rec: StoredInteraction) =>
    x.emulator
      .botMessages(channel)
      .map((m) => [
        m.id === rec.originalId,
        m.content,
        (m.components ?? []).flatMap((row) =>
          (row as { components: { label: string }[] }).components.map((b) => b.label),
        ),
      ]);
  const signIn = {
    ref: "q1",
    text: "Sign in to go on.",
    choices: [{ value: "done", label: "Done", style: "primary" as const }],
  };

  it("says, in a thread, that the turn's only notice went to the asker by DM", async () => {
    let rec: StoredInteraction | undefined;
    const x = await harness(async (inbound) => {
      tokenEnds(x, rec);
      await inbound.reply.notice(BUDGET);
    });
    const s = x.emulator.state;
    const t = await thread(x);
    rec = x.emulator.slash("ask", { question: "over budget?" }, t, s.alice.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    expect(shownIn(x, t, rec)).toEqual([[true, SENT_PRIVATELY, []]]);
    expect(x.emulator.botMessages(s.dmChannel(s.alice.id).id).map((m) => m.content)).toEqual([
      `About what you asked in <#${t}>:\n${BUDGET}`,
    ]);
  });

  it("shows the notice itself in the bot's DM with the asker, and nothing else", async () => {
    let rec: StoredInteraction | undefined;
    const x = await harness(async (inbound) => {
      tokenEnds(x, rec);
      await inbound.reply.notice(BUDGET);
    });
    const s = x.emulator.state;
    const dm = s.dmChannel(s.bob.id).id;
    rec = x.emulator.slash("ask", { question: "over budget?" }, dm, s.bob.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    expect(shownIn(x, dm, rec)).toEqual([[true, BUDGET, []]]);
  });

  it("shows a question asked before any answer, and the answer under it", async () => {
    let rec: StoredInteraction | undefined;
    let buttons: unknown[] = [];
    const x = await harness(async (inbound) => {
      tokenEnds(x, rec);
      const question = await inbound.reply.ask!(signIn);
      buttons = shownIn(x, t, rec!).filter(([original]) => original);
      await inbound.reply.settle!(question, "Signed in.");
      const sink = inbound.reply.stream();
      sink.write("After the sign-in.");
      await sink.finish();
    });
    const t = await thread(x);
    rec = x.emulator.slash("ask", { question: "connect?" }, t, x.emulator.state.alice.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    expect(buttons).toEqual([[true, "Sign in to go on.", ["Done"]]]);
    expect(shownIn(x, t, rec)).toEqual([
      [true, "Signed in.", []],
      [false, "After the sign-in.", []],
    ]);
  });

  it("shows a question asked before any answer while the token lives, and the answer under it", async () => {
    let asked = "";
    const x = await harness(async (inbound) => {
      asked = await inbound.reply.ask!(signIn);
      await inbound.reply.settle!(asked, "Signed in.");
      await answer("After the sign-in.")(inbound);
    });
    const t = await thread(x);
    const rec = x.emulator.slash("ask", { question: "connect?" }, t, x.emulator.state.alice.id);
    await waitFor(() => x.runner.done.length === 1, { timeoutMs: 20_000 });
    expect(asked).toBe(rec.originalId);
    expect(shownIn(x, t, rec)).toEqual([
      [true, "Signed in.", []],
      [false, "After the sign-in.", []],
    ]);
  });
});
