import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { needsServer, serverUrl } from "../../src/store/testing.js";
import { DiscordEmulator } from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { ledgerAfter } from "../support/ledger.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { killStarted, type Running, startSwitchboard, waitUntil } from "../support/process.js";
import { deleteAppKeys, redisDatabase } from "../support/redis-databases.js";

function responder(req: RecordedRequest) {
  if (isTitleRequest(req)) return { text: "Stopping" };
  const asked = lastUserText(req).replace(/^\[\w+\] /, "");
  // A long answer keeps the stopping replica connected, its turn in flight, for a few seconds.
  if (asked === "take your time")
    return { text: `ANSWER TO: ${asked}. ${"and so on ".repeat(30)}`, delayMs: 100 };
  return { text: `ANSWER TO: ${asked}` };
}

/**
 * A replica that stops leaves the messages that came meanwhile to the next process, in its
 * gateway session's record: the live replica, which received them too and answered them,
 * reads that session's replay as well, and must not answer them a second time.
 */
describe("two Discord replicas on one gateway session, one of them stopping", needsServer("redis"), () => {
  const url = redisDatabase(serverUrl("redis"), 4);
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let replicas: Running[] = [];

  beforeAll(async () => {
    await deleteAppKeys(url);
    llm = await LlmEmulator.start({ responder });
    discord = await DiscordEmulator.start();
    dir = scratchConfig("llm:\n  maxRetries: 0\n");
    env = appEnv({ dir, llm, discord, store: url });
  });

  afterAll(async () => {
    for (const r of replicas) r.child.kill("SIGTERM");
    await Promise.all(replicas.map((r) => r.exited));
    killStarted();
    await discord?.stop();
    await llm?.close();
    await deleteAppKeys(url);
    rmSync(dir, { recursive: true, force: true });
  });

  const questions = (text: string) =>
    llm.requests.filter((r) => !isTitleRequest(r) && lastUserText(r).endsWith(`] ${text}`)).length;
  const answerIn = (thread: string) => discord.botMessages(thread).map((m) => m.content);

  it("answers what came while one stopped once, by the live one, and passes it over in the stopped one's replay", async () => {
    const stopping = startSwitchboard("start", env);
    await waitUntil(() => stopping.stderr().includes("Switchboard is running"), "the first replica to start");
    const live = startSwitchboard("start", env);
    replicas = [stopping, live];
    await waitUntil(() => live.stderr().includes("Switchboard is running"), "the second replica to start");
    await waitUntil(() => discord.gateway.connected() === 2, "two gateway sessions");
    // The live replica sees each message 400 ms after the other: the other takes the slow question.
    discord.gateway.lag(1, 400);
    const slow = discord.userMessage(discord.state.general, "take your time", { mentionsBot: true });
    await waitUntil(() => questions("take your time") === 1, "the slow question to reach the model");

    stopping.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 500));
    const late = discord.userMessage(discord.state.general, "one more thing", { mentionsBot: true });
    await waitUntil(
      () => answerIn(late.id).includes("ANSWER TO: one more thing"),
      "the live replica's answer",
    );
    await stopping.exited;
    expect(stopping.stderr()).toContain(
      "left the messages that came while stopping to the next Discord process",
    );
    await waitUntil(
      () => live.stderr().includes("reading the messages a stopped process received"),
      "the live replica to read the stopped one's session",
      15_000,
    );
    await new Promise((r) => setTimeout(r, 2_000));
    expect(answerIn(slow.id).join("")).toContain("and so on and so on");
    expect(answerIn(late.id)).toEqual(["ANSWER TO: one more thing"]);
    expect(questions("one more thing")).toBe(1);
    expect(questions("take your time")).toBe(1);
    expect(await ledgerAfter(env)).toEqual([]);
  }, 60_000);
});
