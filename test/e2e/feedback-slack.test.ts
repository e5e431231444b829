/**
 * Ratings in Slack (issue: see and steer what it costs): a finished answer gets Slack's
 * feedback buttons in a `context_actions` block, the answer's text unchanged in a
 * `markdown` block; a click is a vote, answered privately.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHANGED, THANKS } from "../../src/runtime/feedback.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { clickAction } from "../emulators/slack/interactive.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";

type Block = { type: string; text?: string; elements?: Array<Record<string, unknown>> };

for (const native of [true, false]) {
  describe(`feedback buttons in Slack (${native ? "native stream" : "post and update"})`, () => {
    let llm: LlmEmulator;
    let slack: SlackEmulator;
    let running: RunningApp;

    beforeAll(async () => {
      llm = await LlmEmulator.start();
      slack = await SlackEmulator.start();
      running = await startWithEverything(
        `llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: ${native}\n  updateIntervalMs: 250\n`,
        { llm, slack },
      );
    }, 60_000);

    afterAll(async () => {
      await running?.stop();
      await slack?.stop();
      await llm?.close();
    });

    it("adds 👍 / 👎 under the finished answer and records a click as the person's vote", async () => {
      const m = slack.mention("C1", "U_ALICE", "rate this");
      const rated = await waitFor(
        () =>
          slack
            .botReplies("C1", m.ts)
            .find((r) => (r.blocks as Block[] | undefined)?.some((b) => b.type === "context_actions")),
        { timeoutMs: 15_000 },
      );
      const blocks = rated.blocks as Block[];
      const actions = blocks.at(-1);
      expect(rated.text).toContain("rate this");
      if (native) {
        // Carried by the stream's last chat.stopStream: no call of its own.
        expect(blocks).toHaveLength(1);
        const stops = slack.api.calls.filter((c) => c.method === "chat.stopStream");
        expect(stops.length).toBeGreaterThan(0);
        expect(slack.api.calls.filter((c) => c.method === "chat.update")).toEqual([]);
      } else {
        // One more update: the text moves into a markdown block beside the buttons.
        expect(blocks[0]).toEqual({ type: "markdown", text: rated.text });
      }
      const buttons = actions?.elements?.[0] as {
        type: string;
        action_id: string;
        positive_button: { value: string };
        negative_button: { value: string };
      };
      expect(buttons.type).toBe("feedback_buttons");
      expect([buttons.positive_button.value, buttons.negative_button.value]).toEqual(["good", "bad"]);

      const vote = async (value: string, n: number) => {
        clickAction(slack, {
          user: "U_ALICE",
          channel: "C1",
          messageTs: rated.ts,
          actionId: buttons.action_id,
          value,
          feedback: true,
          blockId: "rating",
        });
        await waitFor(() => slack.state.ephemerals.filter((e) => e.user === "U_ALICE").length === n);
        return slack.state.ephemerals.filter((e) => e.user === "U_ALICE").at(-1)?.text;
      };
      expect(await vote("good", 1)).toBe(THANKS);
      expect(await vote("bad", 2)).toBe(CHANGED);
      expect(slack.botReplies("C1", m.ts)).toHaveLength(1);
    });
  });
}
