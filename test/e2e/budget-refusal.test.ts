/**
 * A message a daily budget refuses, on Slack through the real app and @slack/bolt against
 * the emulators: what showed it taken when it was accepted (the agent session working,
 * with Slack's stop button; an assistant thread's "is thinking…") goes with the refusal,
 * since no answer will come to end it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { sessionKey } from "../emulators/slack/web-api-agents.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";

const CAP = 4_000;

function responder(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Title", usage: { input: 10, output: 2 } };
  if (lastUserText(req).includes("spend"))
    return { text: "Spent.", usage: { input: CAP + 1_000, output: 10 } };
  return { text: "Quick answer.", usage: { input: 10, output: 2 } };
}

describe("a message over its daily budget on Slack", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let running: RunningApp | undefined;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
    slack = await SlackEmulator.start();
    running = await startWithEverything(
      `llm:\n  maxRetries: 0\nusage:\n  budgets:\n    perUser:\n      tokens: ${CAP}\n`,
      { llm, slack },
    );
  }, 60_000);

  afterAll(async () => {
    await running?.stop();
    await slack?.stop();
    await llm?.close();
  });

  const session = (ts: string) => slack.api.sessions.get(sessionKey("C1", ts));
  const refusals = () => slack.state.ephemerals.filter((e) => e.text.includes("daily budget"));
  const settled = () => running!.app.dispatcher.settled();

  it("leaves no agent session working, in a thread answered before nor in a new one", async () => {
    const spent = slack.mention("C1", "U_BOB", "spend it all");
    await waitFor(() => slack.botReplies("C1", spent.ts).some((m) => m.text === "Spent."));
    await settled();
    await waitFor(() => session(spent.ts)?.status === "active");

    slack.mention("C1", "U_BOB", "and one more", { threadTs: spent.ts });
    await waitFor(() => refusals().length === 1, { timeoutMs: 20_000 });
    await settled();
    await waitFor(() => session(spent.ts)?.statuses.length === 4, { timeoutMs: 5_000 });
    expect(session(spent.ts)).toMatchObject({
      status: "active",
      statuses: ["processing", "active", "processing", "active"],
    });

    const top = slack.mention("C1", "U_BOB", "a new top-level one");
    await waitFor(() => refusals().length === 2, { timeoutMs: 20_000 });
    await settled();
    await waitFor(() => session(top.ts)?.status === "active", { timeoutMs: 5_000 });
    expect(session(top.ts)?.statuses).toEqual(["processing", "active"]);
    // Refused, not answered: nothing was asked of the model, nothing posted in either thread.
    expect(
      llm.requests.filter(
        (r) => lastUserText(r).includes("one more") || lastUserText(r).includes("top-level"),
      ),
    ).toEqual([]);
    expect(slack.botReplies("C1", top.ts)).toEqual([]);
  }, 60_000);

  it("takes an assistant thread's status away again", async () => {
    const { channel, threadTs } = slack.startAssistantThread("U_BOB");
    await waitFor(() => slack.state.assistant.get(`${channel}:${threadTs}`)?.prompts.length);
    const before = refusals().length;
    slack.dm("U_BOB", "anything at all", { threadTs });
    await waitFor(() => refusals().length === before + 1, { timeoutMs: 20_000 });
    await settled();
    const thread = () => slack.state.assistant.get(`${channel}:${threadTs}`);
    await waitFor(() => thread()?.statuses.at(-1) === "", { timeoutMs: 5_000 });
    expect(thread()?.statuses).toEqual(["is thinking…", ""]);
    expect(thread()?.status).toBe("");
  }, 60_000);
});
