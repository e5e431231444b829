/**
 * Live progress: the reference server's long-running operation reports progress, and the
 * person sees it move under the answer while the tool runs (Slack and Discord status
 * lines), paced by the write scheduler, until the answer replaces it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiscordEmulator, waitFor as waitForDiscord } from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";
import { isTitleRequest, toolResultsSinceUser } from "../support/llm-text.js";

function responder(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Long job" };
  if (toolResultsSinceUser(req).length > 0) return { text: "The job is done." };
  return {
    toolCalls: [{ name: "everything__trigger-long-running-operation", arguments: { duration: 3, steps: 4 } }],
  };
}

/** Percentages a message showed in its status line, in order, over all its versions. */
function percentages(versions: string[]): number[] {
  return versions.flatMap((v) => {
    const m = /Running everything__trigger-long-running-operation… (\d+)%/.exec(v);
    return m ? [Number(m[1])] : [];
  });
}

describe("progress of a long tool call", () => {
  let llm: LlmEmulator;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
  });

  afterAll(async () => {
    await llm?.close();
  });

  describe("in Slack", () => {
    let slack: SlackEmulator;
    let running: RunningApp;

    beforeAll(async () => {
      slack = await SlackEmulator.start();
      running = await startWithEverything(
        "llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: false\n  updateIntervalMs: 250\n",
        { llm, slack },
      );
    }, 60_000);

    afterAll(async () => {
      await running?.stop();
      await slack?.stop();
    });

    it("shows the fraction done under the answer while the tool runs, then the answer alone", async () => {
      const m = slack.mention("C1", "U_ALICE", "run the long job");
      const reply = await waitFor(
        () => slack.botReplies("C1", m.ts).find((r) => r.text === "The job is done."),
        {
          timeoutMs: 15_000,
        },
      );
      const shown = percentages([...reply.edits.map((e) => e.text), reply.text]);
      expect(shown.length).toBeGreaterThanOrEqual(2);
      expect(shown).toEqual([...shown].sort((a, b) => a - b));
      expect(shown.at(-1)).toBeGreaterThanOrEqual(75);
    });
  });

  describe("in Discord", () => {
    let discord: DiscordEmulator;
    let running: RunningApp;

    beforeAll(async () => {
      discord = await DiscordEmulator.start();
      running = await startWithEverything("llm:\n  maxRetries: 0\ndiscord:\n  editIntervalMs: 250\n", {
        llm,
        discord,
      });
    }, 60_000);

    afterAll(async () => {
      await running?.stop();
      await discord?.stop();
    });

    it("shows the fraction done in the status line while the tool runs, then the answer alone", async () => {
      const s = discord.state;
      const m = discord.userMessage(s.general, "run the long job", { mentionsBot: true });
      const reply = await waitForDiscord(
        () => discord.botMessages(m.id).find((x) => x.content === "The job is done."),
        { timeoutMs: 15_000 },
      );
      // Discord allows 5 writes per 5 s in a channel, and updates leave room for answers:
      // some steps are skipped, but the person sees the fraction move forward.
      const shown = percentages([...reply.edits, reply.content]);
      expect(new Set(shown).size).toBeGreaterThanOrEqual(2);
      expect(shown).toEqual([...shown].sort((a, b) => a - b));
    });
  });
});
