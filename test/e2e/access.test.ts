/**
 * The access lists through the real app: someone outside them gets one short private
 * sentence, and nothing of their message is stored or sent to the model.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REFUSED_NOTE } from "../../src/runtime/access.js";
import { DiscordEmulator, waitFor as waitForDiscord } from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { untilQuiet } from "../support/quiet.js";

const responder = (req: RecordedRequest) =>
  isTitleRequest(req)
    ? { text: "Title" }
    : { text: `You said: ${lastUserText(req).replace(/^\[[^\]]*\]\s*/, "")}` };
const asked = (llm: LlmEmulator, words: string) => llm.requests.some((r) => lastUserText(r).includes(words));

describe("access lists in Slack", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let running: RunningApp;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
    slack = await SlackEmulator.start();
    running = await startWithEverything("llm:\n  maxRetries: 0\naccess:\n  users: [U_ALICE]\n  dm: off\n", {
      llm,
      slack,
    });
  }, 60_000);

  afterAll(async () => {
    await running?.stop();
    await slack?.stop();
    await llm?.close();
  });

  it("answers a listed person", async () => {
    const m = slack.mention("C1", "U_ALICE", "hello from alice");
    await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text.includes("hello from alice")));
  });

  it("tells anyone else once, privately, and neither stores nor sends their messages", async () => {
    const first = slack.mention("C1", "U_BOB", "secret one from bob");
    await waitFor(() => slack.state.ephemerals.find((e) => e.user === "U_BOB"));
    const second = slack.mention("C1", "U_BOB", "secret two from bob");
    await running.app.dispatcher.settled();
    await untilQuiet(slack.api.calls);
    expect(slack.state.ephemerals.filter((e) => e.user === "U_BOB").map((e) => e.text)).toEqual([
      REFUSED_NOTE,
    ]);
    expect(slack.botReplies("C1", first.ts)).toEqual([]);
    expect(slack.botReplies("C1", second.ts)).toEqual([]);
    expect(asked(llm, "secret")).toBe(false);
    expect(await running.app.sessions.exists(`slack:T1:C1:${first.ts}`)).toBe(false);
  });

  it("refuses direct messages when they are off, also for a listed person", async () => {
    const d = slack.dm("U_ALICE", "a direct secret");
    await waitFor(() => slack.state.ephemerals.find((e) => e.user === "U_ALICE"));
    await running.app.dispatcher.settled();
    expect(asked(llm, "direct secret")).toBe(false);
    expect(slack.botReplies(d.channel, d.ts)).toEqual([]);
  });
});

describe("access lists in Discord", () => {
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  let running: RunningApp;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
    discord = await DiscordEmulator.start();
    discord.state.defineRole("R_TEAM", "team");
    running = await startWithEverything(
      `llm:\n  maxRetries: 0\naccess:\n  discordRoles: ["R_TEAM"]\n  discordGuilds: ["${discord.state.guildId}"]\n`,
      { llm, discord },
    );
  }, 60_000);

  afterAll(async () => {
    await running?.stop();
    await discord?.stop();
    await llm?.close();
  });

  it("refuses a member without a listed role, and answers one with it", async () => {
    const s = discord.state;
    const refused = discord.userMessage(s.general, "no role here", { mentionsBot: true });
    await waitForDiscord(() => discord.botMessages(s.general).find((m) => m.content === REFUSED_NOTE));
    discord.userMessage(s.general, "no role again", { mentionsBot: true });
    await running.app.dispatcher.settled();
    await untilQuiet(discord.requests);
    expect(asked(llm, "no role")).toBe(false);
    expect(discord.threads(s.general).some((t) => t.id === refused.id)).toBe(false);
    expect(discord.botMessages(s.general).filter((m) => m.content === REFUSED_NOTE)).toHaveLength(1);

    s.setRoles(s.alice.id, ["R_TEAM"]);
    const m = discord.userMessage(s.general, "with the role", { mentionsBot: true });
    await waitForDiscord(() => discord.botMessages(m.id).find((x) => x.content.includes("with the role")));
  });
});
