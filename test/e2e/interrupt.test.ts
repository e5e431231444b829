/**
 * Ctrl+C on `npm start` signals the terminal's whole foreground process group. The bot
 * stops gracefully, finishing the replies in flight; the MCP servers those replies are
 * calling must not die with the same keystroke, so they run in a session of their own.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { SlackEmulator } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { everythingMcp, scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, toolResultsSinceUser } from "../support/llm-text.js";
import { alive, childPids, killStarted, startSwitchboard, waitUntil } from "../support/process.js";

function responder(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Long job" };
  const results = toolResultsSinceUser(req);
  if (results.length > 0) return { text: `Tool said: ${results.join(" ")}` };
  return {
    toolCalls: [{ name: "everything__trigger-long-running-operation", arguments: { duration: 3, steps: 3 } }],
  };
}

describe.runIf(process.platform === "linux")("Ctrl+C to the terminal running the bot", () => {
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let dir: string;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
    slack = await SlackEmulator.start();
    dir = scratchConfig("llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: false\n", everythingMcp);
  });

  afterAll(async () => {
    killStarted();
    await slack?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("finishes the tool call in flight before the bot exits: the servers are not in the signalled group", async () => {
    const bot = startSwitchboard("start", appEnv({ dir, llm, slack }), { ownGroup: true });
    await waitUntil(() => bot.stderr().includes("Switchboard is running"), "the bot to start");
    const servers = childPids(bot.child.pid!);
    expect(servers.length).toBeGreaterThan(0);
    const m = slack.mention("C1", "U_ALICE", "run the long job");
    await waitUntil(
      () => slack.botReplies("C1", m.ts).some((r) => r.text.includes("trigger-long-running-operation")),
      "the tool call to start",
    );
    // What a terminal does on Ctrl+C: SIGINT to every process of the foreground group.
    process.kill(-bot.child.pid!, "SIGINT");
    expect(await bot.exited).toBe(0);
    const replies = slack.botReplies("C1", m.ts).map((r) => r.text);
    expect(replies.join("\n")).toContain(
      "Tool said: Long running operation completed. Duration: 3 seconds, Steps: 3.",
    );
    expect(replies.join("\n")).not.toMatch(/exited|was killed|Interrupted by a restart/);
    // The bot ended its servers itself on the way out.
    expect(servers.filter(alive)).toEqual([]);
  }, 60_000);
});
