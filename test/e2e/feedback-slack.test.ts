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
import type { WebApiCall } from "../emulators/slack/web-api.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";

type Block = { type: string; text?: string; elements?: Array<Record<string, unknown>> };

/** A write that carries the rating buttons. */
const carriesRating = (c: WebApiCall) => JSON.stringify(c.params.blocks ?? "").includes("feedback_buttons");

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

    /** The bot's reply under `ts` once it shows the rating buttons. */
    const ratedReply = (ts: string) =>
      waitFor(
        () =>
          slack
            .botReplies("C1", ts)
            .find((r) => (r.blocks as Block[] | undefined)?.some((b) => b.type === "context_actions")),
        { timeoutMs: 15_000 },
      );

    afterAll(async () => {
      await running?.stop();
      await slack?.stop();
      await llm?.close();
    });

    it("adds 👍 / 👎 under the finished answer and records a click as the person's vote", async () => {
      // Streamed after the first post (one chunk every 20 ms, inside the 250 ms between
      // edits), so that the answer's final text needs a write after it has finished.
      const answer = "Here is an answer that streams in several chunks, to be rated.";
      llm.enqueue({ text: answer, chunkSize: 8, delayMs: 20 });
      const m = slack.mention("C1", "U_ALICE", "rate this");
      const rated = await ratedReply(m.ts);
      const blocks = rated.blocks as Block[];
      const actions = blocks.at(-1);
      expect(rated.text).toBe(answer);
      if (native) {
        // Carried by the stream's last chat.stopStream: no call of its own.
        expect(blocks).toHaveLength(1);
        const stops = slack.api.calls.filter((c) => c.method === "chat.stopStream");
        expect(stops.length).toBeGreaterThan(0);
        expect(slack.api.calls.filter((c) => c.method === "chat.update")).toEqual([]);
      } else {
        // The final write carries them: the text in a markdown block beside the buttons.
        expect(blocks[0]).toEqual({ type: "markdown", text: rated.text });
        const writes = slack.api.calls.filter(
          (c) => c.ok && (c.method === "chat.update" || c.method === "chat.postMessage"),
        );
        expect(writes.filter(carriesRating)).toHaveLength(1);
        // No write of their own: the final text never showed without them.
        expect(writes.filter((c) => !carriesRating(c) && c.params.markdown_text === rated.text)).toEqual([]);
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

    if (!native)
      it("writes the answer's text without the buttons when Slack refuses its last write with them", async () => {
        // Streamed as above: the answer's one chat.update is its final write, and Slack refuses it.
        const answer = "An answer whose last write Slack refuses with the rating buttons.";
        llm.enqueue({ text: answer, chunkSize: 8, delayMs: 20 });
        // A workspace that refuses the buttons, every time.
        slack.api.refuse("chat.update", "invalid_blocks", Number.POSITIVE_INFINITY, (params) =>
          JSON.stringify(params.blocks ?? "").includes("feedback_buttons"),
        );
        try {
          const m = slack.mention("C1", "U_ALICE", "refused buttons");
          const reply = await waitFor(() => slack.botReplies("C1", m.ts).find((r) => r.text === answer), {
            timeoutMs: 15_000,
          });
          const updates = slack.api.calls.filter(
            (c) => c.method === "chat.update" && c.params.ts === reply.ts,
          );
          expect(updates[0]).toMatchObject({ ok: false, error: "invalid_blocks" });
          expect(carriesRating(updates[0]!)).toBe(true);
          expect(updates[1]).toMatchObject({ ok: true, params: { markdown_text: answer } });
          expect(slack.botReplies("C1", m.ts)).toHaveLength(1);
        } finally {
          slack.api.allow("chat.update");
        }
      });

    // Only post and update: a native stream carries them on its last chat.stopStream whatever came before.
    if (!native)
      it("gives an answer posted whole before it finished its buttons in one update of their own", async () => {
        const m = slack.mention("C1", "U_ALICE", "short one");
        const rated = await ratedReply(m.ts);
        const writes = slack.api.calls.filter(
          (c) =>
            c.ok &&
            ((c.method === "chat.postMessage" && c.params.thread_ts === m.ts) ||
              (c.method === "chat.update" && c.params.ts === rated.ts)),
        );
        // The echo comes in one chunk: its first post is already the whole answer.
        expect(writes.map((c) => c.method)).toEqual(["chat.postMessage", "chat.update"]);
        expect(writes[0]?.params.markdown_text).toBe(rated.text);
        expect((rated.blocks as Block[])[0]).toEqual({ type: "markdown", text: rated.text });
      });
  });
}
