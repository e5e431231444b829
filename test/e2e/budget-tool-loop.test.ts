/**
 * A daily budget spent by a turn's own tool steps stops the turn before its next model
 * call, on the real app against the Discord and LLM emulators and server-everything: the
 * cap is checked before every model call, not only before the turn's first.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiscordEmulator, waitFor } from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { DAY_WAIT_MS, inOneUtcDay } from "../support/one-utc-day.js";

const CAP = 4_000;

let llm: LlmEmulator;
let discord: DiscordEmulator;
let running: RunningApp | undefined;

const hasToolResult = (req: RecordedRequest) =>
  (req.messages as Array<{ role?: string }>).some((m) => m.role === "tool");

/** Every answer first calls echo, reporting more tokens than the whole cap; after a result it would answer. */
function responder(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Echoes", usage: { input: 10, output: 2 } };
  if (hasToolResult(req))
    return { text: "Echoed, and here is the answer.", usage: { input: 100, output: 10 } };
  return {
    toolCalls: [{ name: "everything__echo", arguments: { message: lastUserText(req) } }],
    usage: { input: CAP + 1_000, output: 20 },
  };
}

beforeAll(async () => {
  llm = await LlmEmulator.start({ responder });
  discord = await DiscordEmulator.start();
  running = await startWithEverything(
    `llm:\n  maxRetries: 0\nusage:\n  budgets:\n    perUser:\n      tokens: ${CAP}\n`,
    { llm, discord },
  );
}, 60_000);

afterAll(async () => {
  await running?.stop();
  await discord?.stop();
  await llm?.close();
});

describe("a daily budget spent in the middle of a turn", () => {
  it(
    "ends the turn after the tool step that spent it, says so, and asks the model nothing more",
    async () => {
      await inOneUtcDay();
      const s = discord.state;
      const m = discord.userMessage(s.general, "echo me", { mentionsBot: true });
      const said = () =>
        discord
          .botMessages(m.id)
          .map((x) => x.content)
          .join("\n");
      await waitFor(() => said().includes("daily budget"), { timeoutMs: 20_000 });
      await running!.app.dispatcher.settled();

      expect(said()).toMatch(
        /You have used your daily budget of 4,000 tokens \(5,020 tokens used\), so I will not ask the model for now\. It resets at 00:00 UTC, in /,
      );
      expect(said()).not.toContain("here is the answer");
      const answers = llm.requests.filter((r) => !isTitleRequest(r));
      // The step that called echo, and no request with its result.
      expect(answers).toHaveLength(1);
      expect(answers.some(hasToolResult)).toBe(false);
    },
    60_000 + DAY_WAIT_MS,
  );
});
