/**
 * What the asker of a Slack message is told where the thread cannot show it, on the real
 * app (runtime, Bolt, native streaming) against the Slack and LLM emulators: a private
 * notice for a message nobody has replied to goes to the channel (Slack shows one under a
 * thread only once the thread has a reply), and an answer whose channel is archived while
 * it streams stops at once, its asker told by direct message why.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwritableSentence } from "../../src/adapters/slack/unwritable.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { DAY_WAIT_MS, inOneUtcDay } from "../support/one-utc-day.js";

const CAP = 4_000;
/** About 12 s of streaming, then a tool call: long enough to archive the channel in the middle. */
const SLOW = Array.from({ length: 120 }, (_, i) => `word${i}`).join(" ");

const hasToolResult = (req: RecordedRequest) =>
  (req.messages as Array<{ role?: string }>).some((m) => m.role === "tool");

function responder(req: RecordedRequest): ScriptedTurn {
  const small = { input: 10, output: 2 };
  if (isTitleRequest(req)) return { text: "Title", usage: small };
  if (hasToolResult(req)) return { text: "After the tool.", usage: small };
  const asked = lastUserText(req);
  if (asked.includes("spend")) return { text: "Spent.", usage: { input: CAP + 1_000, output: 10 } };
  if (asked.includes("slow"))
    return {
      text: SLOW,
      chunkSize: 6,
      delayMs: 100,
      toolCalls: [{ name: "everything__echo", arguments: { message: "more" } }],
      usage: small,
    };
  return { text: "Quick answer.", usage: small };
}

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

const dmOf = (user: string) => slack.state.history(slack.state.dmChannel(user).id).map((m) => m.text);

describe("Slack: where the asker is told what the thread cannot show", () => {
  it(
    "shows a budget refusal of a top-level mention in the channel, where Slack shows it",
    async () => {
      await inOneUtcDay();
      const spent = slack.mention("C1", "U_BOB", "spend it all");
      await waitFor(() => slack.botReplies("C1", spent.ts).some((m) => m.text === "Spent."));
      await running!.app.dispatcher.settled();
      const refused = slack.mention("C1", "U_BOB", "and one more");
      const told = await waitFor(() => slack.state.ephemerals.find((e) => e.text.includes("daily budget")), {
        timeoutMs: 20_000,
      });
      // Under the mention, which nobody has replied to, Slack would answer ok and show it nowhere.
      expect(told).toMatchObject({ channel: "C1", user: "U_BOB", shown: true });
      expect(told.thread_ts).toBeUndefined();
      expect(slack.botReplies("C1", refused.ts)).toEqual([]);
    },
    60_000 + DAY_WAIT_MS,
  );

  it("stops an answer whose channel is archived while it streams, asks the model nothing more, and tells the asker by DM", async () => {
    slack.state.addChannel("C8", "project");
    const m = slack.mention("C8", "U_ALICE", "a slow answer please");
    await waitFor(() => slack.botReplies("C8", m.ts).some((r) => r.text.includes("word3")), {
      timeoutMs: 15_000,
    });
    slack.state.channels.get("C8")!.archived = true;
    await waitFor(() => dmOf("U_ALICE").length > 0, { timeoutMs: 15_000 });
    await running!.app.dispatcher.settled();
    expect(dmOf("U_ALICE")).toEqual([unwritableSentence("is_archived", "C8")]);
    const answers = llm.requests.filter((r) => !isTitleRequest(r) && lastUserText(r).includes("slow"));
    // The streaming request was given up before its tool call, and nothing asked after it.
    expect(answers).toHaveLength(1);
    // The connection closes a moment after the turn gives the stream up.
    await waitFor(() => answers[0]?.abandoned === true, { timeoutMs: 5_000 });
    expect(llm.requests.some(hasToolResult)).toBe(false);
    expect(
      slack
        .botReplies("C8", m.ts)
        .map((r) => r.text)
        .join(""),
    ).not.toContain("word119");
  }, 60_000);
});
