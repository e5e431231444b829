import { afterEach, describe, expect, it } from "vitest";
import { DiscordEmulator, waitFor } from "../../../test/emulators/discord/index.js";
import { REFUSED_NOTE } from "../../runtime/access.js";
import { COMMAND_FAILED } from "./commands.js";
import { answer, type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

let h: Harness;
/** An emulator a test started itself: the harness leaves it running. */
let own: DiscordEmulator | undefined;

afterEach(async () => {
  await h?.close();
  await own?.stop();
  own = undefined;
});

const EPHEMERAL = 64;

describe("Discord adapter: slash commands", () => {
  it("registers /ask and every catalog command to DISCORD_GUILD_ID at start", async () => {
    h = await startHarness();
    const names = h.emulator.state.commands.guild.get(h.emulator.guildId)?.map((c) => c.name);
    expect(names?.sort()).toEqual([
      "ask",
      "compact",
      "connect",
      "disconnect",
      "help",
      "model",
      "new",
      "prompt",
      "prompts",
      "reconnect",
      "stop",
      "summary",
      "title",
      "tools",
      "usage",
    ]);
    expect(h.emulator.state.commands.global).toEqual([]);
  });

  it("registers globally when no guild is configured", async () => {
    h = await startHarness({ guild: false });
    expect(h.emulator.state.commands.global.map((c) => c.name)).toContain("ask");
  });

  it("defers /ask at once, then answers in a new thread opened from the reply", async () => {
    h = await startHarness({
      runner: new ScriptedRunner(answer("Because of physics.", { title: "Sky colour" })),
    });
    const s = h.emulator.state;
    const rec = h.emulator.slash("ask", { question: "why is the sky blue?" }, s.general, s.alice.id);
    await waitFor(() => h.runner.done.length === 1);
    expect(rec.callbacks).toEqual([5]);
    const opener = s.findMessage(rec.originalId!)!;
    expect(opener.content).toBe("**alice** asked: why is the sky blue?");
    const thread = h.emulator.threads(s.general)[0]!;
    expect(thread.id).toBe(opener.id);
    expect(h.runner.inbounds[0]).toMatchObject({
      key: `discord:${s.guildId}:${thread.id}`,
      text: "why is the sky blue?",
    });
    expect(h.emulator.botMessages(thread.id).map((m) => m.content)).toEqual(["Because of physics."]);
    await waitFor(() => h.emulator.renames.length === 1);
  });

  it("answers /ask in place at once when Discord would hold the channel's next thread back", async () => {
    // One thread per channel per window (30 s at this speed): the second /ask's thread is refused for longer than a person waits.
    own = await DiscordEmulator.start({ rateLimits: { speed: 10, threads: 1 } });
    h = await startHarness({ emulator: own, runner: new ScriptedRunner(answer("Here it is.")) });
    const s = h.emulator.state;
    h.emulator.slash("ask", { question: "first?" }, s.general, s.alice.id);
    await waitFor(() => h.runner.done.length === 1);
    const rec = h.emulator.slash("ask", { question: "second?" }, s.general, s.bob.id);
    // Within waitFor's 10 s, where waiting for the thread would take 30.
    await waitFor(() => h.runner.done.length === 2);
    expect(h.emulator.threads(s.general)).toHaveLength(1);
    // A conversation of its own, not the channel's: bob's question does not build on alice's.
    expect(h.runner.inbounds[1]?.key).toBe(`discord:${s.guildId}:${rec.id}`);
    // The question shown stays; the answer comes under it.
    expect(s.findMessage(rec.originalId!)?.content).toBe("**bob** asked: second?");
    const answered = await waitFor(() => s.findMessage(rec.followupIds[0] ?? ""));
    expect(answered.content).toBe("Here it is.");
  });

  it("answers /ask inside a thread or DM through the interaction itself", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("Private answer.")) });
    const s = h.emulator.state;
    const dm = s.dmChannel(s.bob.id);
    const rec = h.emulator.slash("ask", { question: "secret?" }, dm.id, s.bob.id);
    await waitFor(() => h.runner.done.length === 1);
    expect(h.runner.inbounds[0]?.key).toBe(`discord:dm:${dm.id}`);
    expect(s.findMessage(rec.originalId!)?.content).toBe("Private answer.");
    expect(h.emulator.threads()).toEqual([]);
  });

  it("tells only the asker, privately, when its /ask thread opened but takes none of the bot's messages", async () => {
    // The turn's own ending: a reply refused for good tells the asker another way (turn.ts).
    const runner = new ScriptedRunner(async (inbound) => {
      const sink = inbound.reply.stream();
      sink.write("Never shown.");
      await sink.finish().catch(() => undefined);
      const broken = sink.broken?.();
      if (broken !== undefined) await inbound.reply.unwritable?.(broken);
    });
    h = await startHarness({ runner });
    const s = h.emulator.state;
    // A common override mistake: threads may be opened, nothing written in them.
    h.emulator.denyBot(s.general, "SEND_MESSAGES_IN_THREADS");
    const rec = h.emulator.slash("ask", { question: "who can see this?" }, s.general, s.alice.id);
    await waitFor(() => runner.done.length === 1);
    const thread = h.emulator.threads(s.general)[0]!;
    expect(h.emulator.botMessages(thread.id)).toEqual([]);
    const told = await waitFor(() => s.findMessage(rec.followupIds[0] ?? ""));
    expect(told.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(told.content).toBe(
      `I could not answer in <#${thread.id}>: I am missing a permission there (Send Messages, or Send Messages in Threads in a thread). Ask a server admin to grant it, then ask again.`,
    );
    // The question shown stays as it was, for everyone.
    expect(s.findMessage(rec.originalId!)?.content).toBe("**alice** asked: who can see this?");
  });

  it("tells only the asker when the access lists refuse their /ask: no public message, no thread", async () => {
    const runner = new ScriptedRunner(answer("Never shown."));
    runner.admit = (who) => (who.user.id === h.emulator.state.bob.id ? "silent" : "yes");
    h = await startHarness({ runner });
    const s = h.emulator.state;
    const rec = h.emulator.slash("ask", { question: "let me in?" }, s.general, s.bob.id);
    await waitFor(() => rec.callbacks.length === 1);
    expect(rec.callbacks).toEqual([4]);
    const told = s.findMessage(rec.originalId!)!;
    expect(told.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(told.content).toBe(REFUSED_NOTE);
    expect(h.emulator.threads(s.general)).toEqual([]);
    expect(h.emulator.botMessages(s.general).filter((m) => !(m.flags & EPHEMERAL))).toEqual([]);
    // Someone the lists let in is answered as ever.
    h.emulator.slash("ask", { question: "and me?" }, s.general, s.alice.id);
    await waitFor(() => h.runner.done.length === 1);
    expect(runner.inbounds.map((i) => i.user.id)).toEqual([s.alice.id]);
  });

  it("removes the deferred reply of an /ask answered only with a notice, and tells the asker alone", async () => {
    h = await startHarness({
      runner: new ScriptedRunner(async (inbound) => inbound.reply.notice("You reached today's budget.")),
    });
    const s = h.emulator.state;
    const dm = s.dmChannel(s.bob.id);
    const rec = h.emulator.slash("ask", { question: "one more?" }, dm.id, s.bob.id);
    await waitFor(() => h.runner.done.length === 1);
    await waitFor(() => rec.followupIds.length === 1);
    expect(s.findMessage(rec.originalId!)?.deleted).toBe(true);
    const note = s.findMessage(rec.followupIds[0]!)!;
    expect(note.content).toBe("You reached today's budget.");
    expect(note.flags & EPHEMERAL).toBe(EPHEMERAL);
  });

  it("puts Stop under an /ask answer written in a DM, and 👍 / 👎 once it is done", async () => {
    const stopShown: boolean[] = [];
    h = await startHarness({
      runner: new ScriptedRunner(async (inbound) => {
        inbound.reply.offerStop?.("stop1");
        inbound.reply.offerFeedback?.("rate1");
        const sink = inbound.reply.stream();
        sink.write("Thinking about it, ");
        await waitFor(() => (h.emulator.state.findMessage(rec.originalId ?? "")?.content ?? "") !== "");
        const msg = h.emulator.state.findMessage(rec.originalId!)!;
        stopShown.push(JSON.stringify(msg.components ?? []).includes("sb:stop1:stop"));
        sink.write("the answer is 42.");
        await sink.finish({ answered: true });
      }),
    });
    const s = h.emulator.state;
    const dm = s.dmChannel(s.bob.id);
    const rec = h.emulator.slash("ask", { question: "meaning?" }, dm.id, s.bob.id);
    await waitFor(() => h.runner.done.length === 1);
    expect(stopShown).toEqual([true]);
    await waitFor(() => JSON.stringify(s.findMessage(rec.originalId!)?.components ?? []).includes("rate1"));
    const done = s.findMessage(rec.originalId!)!;
    expect(done.content).toBe("Thinking about it, the answer is 42.");
    expect(JSON.stringify(done.components)).not.toContain("stop1");
  });

  /** A thread the bot answered in, as a person would use thread commands there. */
  async function answeredThread(): Promise<string> {
    const asked = h!.emulator.userMessage(h!.emulator.state.general, "start", { mentionsBot: true });
    await waitFor(() => h!.runner.done.length === 1);
    return asked.id;
  }

  for (const name of ["new", "tools", "compact", "help"] as const) {
    it(`answers /${name} ephemerally with the runner's text for this thread`, async () => {
      h = await startHarness();
      const s = h.emulator.state;
      const thread = await answeredThread();
      const rec = h.emulator.slash(name, {}, thread, s.alice.id);
      await waitFor(() => s.findMessage(rec.originalId ?? "")?.content);
      const msg = s.findMessage(rec.originalId!)!;
      expect(msg.flags & EPHEMERAL).toBe(EPHEMERAL);
      expect(h.runner.commands[0]).toMatchObject({
        name,
        key: `discord:${s.guildId}:${thread}`,
        user: { id: s.alice.id },
      });
      expect(msg.content).toBe(
        name === "help" ? "Mention me and I answer." : `ran ${name} for discord:${s.guildId}:${thread}`,
      );
    });
  }

  it("replaces the deferred reply with an error sentence when the command fails", async () => {
    const runner = new ScriptedRunner();
    runner.command = async () => {
      throw new Error("the session store is down");
    };
    h = await startHarness({ runner });
    const s = h.emulator.state;
    const rec = h.emulator.slash("compact", {}, await answeredThread(), s.alice.id);
    await waitFor(() => s.findMessage(rec.originalId ?? "")?.content);
    const msg = s.findMessage(rec.originalId!)!;
    expect(msg.content).toBe(COMMAND_FAILED);
    expect(msg.flags & EPHEMERAL).toBe(EPHEMERAL);
  });

  it("still fills the deferred /ask reply when its first write is rate limited", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("Answer after a pause.")) });
    const s = h.emulator.state;
    h.emulator.rateLimitEdits(300, 1);
    const dm = s.dmChannel(s.bob.id);
    const rec = h.emulator.slash("ask", { question: "slow?" }, dm.id, s.bob.id);
    await waitFor(() => h.runner.done.length === 1);
    expect(h.emulator.limiter.hits.filter((x) => x.kind === "edit")).toHaveLength(1);
    expect(s.findMessage(rec.originalId!)?.content).toBe("Answer after a pause.");
    expect(rec.followupIds).toEqual([]);
  });

  it("passes /model's name and autocompletes the configured models", async () => {
    h = await startHarness();
    const s = h.emulator.state;
    const ac = h.emulator.autocomplete("model", { name: "gpt-4" }, "name", s.general, s.alice.id);
    await waitFor(() => ac.choices);
    expect(ac.choices?.map((c) => c.value)).toEqual(["gpt-4o-mini", "gpt-4o", "gpt-4.1-mini"]);
    const rec = h.emulator.slash("model", { name: "gpt-4o" }, await answeredThread(), s.alice.id);
    await waitFor(() => s.findMessage(rec.originalId ?? "")?.content);
    expect(h.runner.commands[0]).toMatchObject({ name: "model", arg: "gpt-4o" });
  });

  it("autocompletes /prompt with choices Discord takes: 25 at most, none over 100 characters", async () => {
    // MCP prompt names have no length limit; one this long cannot be a choice's value.
    const long = `ops/${"summarise-the-incident-".repeat(5)}report`;
    const listed = Array.from({ length: 30 }, (_, i) => `ops/report-${i}`);
    const names = [long, "ops/report-0", ...listed];
    h = await startHarness({ prompts: () => names });
    const s = h.emulator.state;
    const ac = h.emulator.autocomplete("prompt", { name: "" }, "name", s.general, s.alice.id);
    const callback = () => h.emulator.requests.find((r) => r.path.includes(`/interactions/${ac.id}/`));
    await waitFor(callback);
    expect(callback()?.status).toBe(204);
    expect(ac.choices?.map((c) => c.value)).toEqual(listed.slice(0, 25));
    expect(ac.choices?.every((c) => c.name === c.value)).toBe(true);
  });

  it("renames the bot's thread on /title", async () => {
    h = await startHarness();
    const s = h.emulator.state;
    const asked = h.emulator.userMessage(s.general, "start", { mentionsBot: true });
    await waitFor(() => h.runner.done.length === 1);
    const rec = h.emulator.slash("title", {}, asked.id, s.alice.id);
    await waitFor(() => h.emulator.renames.length === 1);
    expect(h.emulator.renames[0]?.name).toBe("Renamed on request");
    expect(s.findMessage(rec.originalId!)?.content).toBe("New title: Renamed on request");
  });

  it("handles an interaction delivered twice once", async () => {
    h = await startHarness();
    h.emulator.deliverTwice = true;
    const s = h.emulator.state;
    const rec = h.emulator.slash("help", {}, s.general, s.alice.id);
    await waitFor(() => s.findMessage(rec.originalId ?? "")?.content);
    expect(rec.callbacks).toEqual([5]);
    expect(h.runner.commands).toHaveLength(1);
  });
});
