/**
 * Stop, through the real app and SDKs against the emulators: a slow answer gets a Stop
 * button (Slack: a private one for the asker once the answer takes a while; Discord: under
 * the message while it is written). Only the asker or an approver can stop it; then no
 * more text comes, the model request is abandoned, the text so far ends with
 * "Stopped by …", and the session keeps the question.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { interactionId, parseInteractionId } from "../../src/runtime/interaction-ids.js";
import { clickComponent } from "../emulators/discord/components.js";
import {
  DiscordEmulator,
  type StoredMessage,
  waitFor as waitForDiscord,
} from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { clickAction } from "../emulators/slack/interactive.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { untilQuiet } from "../support/quiet.js";

/** About 12 s of streaming: long enough to be stopped in the middle. */
const SLOW = Array.from({ length: 120 }, (_, i) => `word${i}`).join(" ");

function responder(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Slow" };
  if (lastUserText(req).includes("slow")) return { text: SLOW, chunkSize: 6, delayMs: 100 };
  return { text: "Quick answer." };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("Stop in Slack", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let running: RunningApp;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
    slack = await SlackEmulator.start();
    running = await startWithEverything(
      // Our own Stop button is for apps that are not Slack agents (see agent-sessions.test.ts).
      "llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: false\n  agentSessions: false\n  updateIntervalMs: 250\n",
      { llm, slack },
    );
  }, 60_000);

  afterAll(async () => {
    await running?.stop();
    await slack?.stop();
    await llm?.close();
  });

  it("offers the asker a Stop button; another member cannot stop; the asker's click ends the answer at once", async () => {
    const m = slack.mention("C1", "U_ALICE", "a slow answer please");
    const offer = await waitFor(
      () => slack.state.ephemerals.find((e) => e.user === "U_ALICE" && e.thread_ts === m.ts),
      { timeoutMs: 8_000 },
    );
    const action = ((offer.blocks ?? []) as Array<{ elements?: Array<{ action_id: string; value: string }> }>)
      .flatMap((b) => b.elements ?? [])
      .find((e) => e.value === "stop");
    expect(action).toBeDefined();
    const answer = () => slack.botReplies("C1", m.ts)[0];
    await waitFor(() => (answer()?.text.length ?? 0) > 0);

    clickAction(slack, {
      user: "U_BOB",
      channel: "C1",
      messageTs: m.ts,
      actionId: action!.action_id,
      value: "stop",
    });
    await waitFor(() => slack.state.ephemerals.find((e) => e.user === "U_BOB"));
    expect(slack.state.ephemerals.filter((e) => e.user === "U_BOB").map((e) => e.text)).toEqual([
      "Only alice or an approver can stop this answer.",
    ]);

    clickAction(slack, {
      user: "U_ALICE",
      channel: "C1",
      messageTs: m.ts,
      actionId: action!.action_id,
      value: "stop",
    });
    await waitFor(() => answer()?.text.endsWith("Stopped by alice."), { timeoutMs: 5_000 });
    const stopped = answer()!.text;
    await pause(1_000);
    await running.app.dispatcher.settled();
    expect(answer()!.text).toBe(stopped);
    expect(stopped).not.toContain("word119");
    const request = llm.requests.find((r) => lastUserText(r).includes("a slow answer"));
    expect(request?.abandoned).toBe(true);
    const session = await running.app.sessions.get(`slack:T1:C1:${m.ts}`);
    expect(session?.messages.some((x) => x.role === "user" && x.content.includes("a slow answer"))).toBe(
      true,
    );
  });

  it("tells whoever clicks Stop after the answer ended that it has ended", async () => {
    const m = slack.mention("C1", "U_ALICE", "a quick one");
    await waitFor(() => slack.botReplies("C1", m.ts).some((r) => r.text === "Quick answer."));
    await running.app.dispatcher.settled();
    clickAction(slack, {
      user: "U_ALICE",
      channel: "C1",
      messageTs: m.ts,
      actionId: interactionId("stGONE", "stop"),
      value: "stop",
    });
    await waitFor(() => slack.state.ephemerals.find((e) => e.text === "That answer has already ended."));
  });
});

describe("Stop in Discord", () => {
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  let running: RunningApp;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
    discord = await DiscordEmulator.start();
    running = await startWithEverything("llm:\n  maxRetries: 0\ndiscord:\n  editIntervalMs: 250\n", {
      llm,
      discord,
    });
  }, 60_000);

  afterAll(async () => {
    await running?.stop();
    await discord?.stop();
    await llm?.close();
  });

  const stopButton = (m: StoredMessage) =>
    ((m.components ?? []) as Array<{ components?: Array<{ custom_id: string }> }>)
      .flatMap((r) => r.components ?? [])
      .find((c) => parseInteractionId(c.custom_id)?.value === "stop");

  it("shows Stop under the answer while it is written; the asker's click ends it and the button goes", async () => {
    const s = discord.state;
    const m = discord.userMessage(s.general, "a slow answer please", { mentionsBot: true });
    const answer = await waitForDiscord(() => discord.botMessages(m.id).find((x) => stopButton(x)));
    const button = stopButton(answer)!;
    clickComponent(discord, { message: answer, customId: button.custom_id, userId: s.alice.id });
    await waitForDiscord(() => s.findMessage(answer.id)?.content.endsWith("Stopped by alice."), {
      timeoutMs: 5_000,
    });
    await running.app.dispatcher.settled();
    await untilQuiet(discord.requests);
    const final = s.findMessage(answer.id)!;
    expect(final.content).not.toContain("word119");
    expect(stopButton(final)).toBeUndefined();
    expect(discord.botMessages(m.id).filter((x) => stopButton(x))).toEqual([]);
    expect(llm.requests.find((r) => lastUserText(r).includes("a slow answer"))?.abandoned).toBe(true);
  });

  it("leaves no Stop button on a quick answer", async () => {
    const s = discord.state;
    const m = discord.userMessage(s.general, "a quick one", { mentionsBot: true });
    await waitForDiscord(() => discord.botMessages(m.id).find((x) => x.content === "Quick answer."));
    await running.app.dispatcher.settled();
    await untilQuiet(discord.requests);
    expect(discord.botMessages(m.id).filter((x) => stopButton(x))).toEqual([]);
  });
});
