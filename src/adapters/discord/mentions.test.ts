import { PermissionFlagsBits, type ThreadChannel } from "discord.js";
import { afterEach, describe, expect, it } from "vitest";
import { DiscordEmulator, waitFor } from "../../../test/emulators/discord/index.js";
import { lockThread } from "../../../test/emulators/discord/threads.js";
import { untilQuiet } from "../../../test/support/quiet.js";
import { answer, type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

let h: Harness | undefined;
let emulator: DiscordEmulator | undefined;

afterEach(async () => {
  await h?.close();
  await emulator?.stop();
  h = undefined;
  emulator = undefined;
});

const asked = () => h!.runner.inbounds.map((i) => i.text);

describe("Discord adapter: a mention of the bot's managed role", () => {
  it("is a mention of the bot, gone from the text, while other roles (one the bot holds too) become @names", async () => {
    emulator = await DiscordEmulator.start({ rateLimits: { speed: 10 } });
    const s = emulator.state;
    const team = "123456789012345678";
    s.defineRole(team, "team");
    s.setRoles(s.bot.id, [team]);
    h = await startHarness({ emulator, runner: new ScriptedRunner(answer("4.")) });
    // A role the bot holds is not the bot: Discord's mentions.has() would say it is.
    emulator.userMessage(s.general, `<@&${team}> standup in 5`);
    const question = emulator.userMessage(s.general, `what is 2+2? cc <@&${team}>`, {
      mentionsBotRole: true,
    });
    await waitFor(() => h!.runner.done.length === 1);
    await untilQuiet(emulator.requests);
    expect(asked()).toEqual(["what is 2+2? cc @team"]);
    expect(emulator.botMessages(question.id).map((m) => m.content)).toEqual(["4."]);
  });

  it("in a thread the bot does not follow, answers with the thread so far", async () => {
    emulator = await DiscordEmulator.start({ rateLimits: { speed: 10 } });
    h = await startHarness({ emulator, runner: new ScriptedRunner(answer("Looks fine.")) });
    const s = emulator.state;
    const thread = emulator.existingThread(s.general, "review", [
      { author: s.bob, content: "is this fine?" },
    ]);
    emulator.userMessage(thread.id, "", { mentionsBotRole: true });
    await waitFor(() => h!.runner.done.length === 1);
    expect(asked()).toEqual([""]);
    expect((await h.runner.inbounds[0]?.history?.())?.map((m) => m.text)).toEqual(["is this fine?"]);
  });
});

describe("Discord adapter: a locked thread it follows", () => {
  /** A thread the bot answered in, then locked by a moderator (left open). */
  async function lockedThread(): Promise<string> {
    const harness = h!;
    const question = harness.emulator.userMessage(harness.emulator.state.general, "first", {
      mentionsBot: true,
    });
    await waitFor(() => harness.runner.done.length === 1);
    lockThread(harness.emulator, question.id);
    await waitFor(() => (harness.adapter.client.channels.cache.get(question.id) as ThreadChannel).locked);
    return question.id;
  }

  it("runs no model turn for its messages, and tells a mention's author privately, once", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("ok")) });
    const s = h.emulator.state;
    const thread = await lockedThread();
    // Only moderators may post in it now; the bot, without Manage Threads, may not answer.
    h.emulator.userMessage(thread, "a follow-up");
    h.emulator.userMessage(thread, "are you there?", { mentionsBot: true });
    h.emulator.userMessage(thread, "hello?", { mentionsBot: true });
    const dm = s.dmChannel(s.alice.id).id;
    await waitFor(() => h!.emulator.botMessages(dm).length > 0);
    await untilQuiet(h.emulator.requests);
    expect(asked()).toEqual(["first"]);
    expect(h.emulator.botMessages(dm).map((m) => m.content)).toEqual([
      `I cannot answer in <#${thread}>: the thread is locked, and only moderators may write there. Ask me in <#${s.general}> instead.`,
    ]);
    expect(h.emulator.requests.filter((r) => r.status === 403)).toEqual([]);
  });

  it("answers there once a server admin gives it Manage Threads", async () => {
    h = await startHarness({ runner: new ScriptedRunner(answer("ok")) });
    const thread = await lockedThread();
    h.emulator.grantBot("MANAGE_THREADS");
    const cached = h.adapter.client.channels.cache.get(thread) as ThreadChannel;
    await waitFor(() =>
      cached.permissionsFor(cached.guild.members.me!)?.has(PermissionFlagsBits.ManageThreads),
    );
    h.emulator.userMessage(thread, "a follow-up");
    await waitFor(() => h!.runner.done.length === 2);
    expect(h.emulator.botMessages(thread).map((m) => m.content)).toEqual(["ok", "ok"]);
  });
});
