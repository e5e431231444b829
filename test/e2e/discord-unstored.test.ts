import { rmSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { storedGatewaySessions } from "../../src/adapters/discord/gateway-sessions.js";
import { RESTARTING } from "../../src/adapters/discord/stopping-interactions.js";
import { openStore } from "../../src/store/index.js";
import { createState } from "../../src/store/state.js";
import { DiscordEmulator } from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { ledgerAfter } from "../support/ledger.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { killStarted, type Running, startSwitchboard, waitUntil } from "../support/process.js";

function responder(req: RecordedRequest) {
  if (isTitleRequest(req)) return { text: "Unstored" };
  const asked = lastUserText(req).replace(/^\[\w+\] /, "");
  // A long answer keeps a stopping process connected, its turn in flight, for a few seconds.
  if (asked === "take your time")
    return { text: `ANSWER TO: ${asked}. ${"and so on ".repeat(30)}`, delayMs: 100 };
  return { text: `ANSWER TO: ${asked}` };
}

/**
 * Discord sends a message once, to the socket of the gateway session it belongs to: a bot
 * that dies between receiving a mention and storing it cannot be sent it again. Here the
 * bot is frozen (SIGSTOP) so that the mention reaches its socket and is never read, then
 * killed; the next start must still answer it, once.
 */
describe("kill -9 of the only Discord process before it stored a message", () => {
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const running: Running[] = [];

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
    discord = await DiscordEmulator.start();
    dir = scratchConfig("llm:\n  maxRetries: 0\n");
    env = appEnv({ dir, llm, discord });
  });

  afterEach(async () => {
    for (const r of running.splice(0)) {
      r.child.kill("SIGTERM");
      await r.exited;
    }
  });

  afterAll(async () => {
    killStarted();
    await discord?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const questions = (text: string) =>
    llm.requests.filter((r) => !isTitleRequest(r) && lastUserText(r).endsWith(`] ${text}`)).length;
  const answerIn = (thread: string) => discord.botMessages(thread).map((m) => m.content);

  async function started(): Promise<Running> {
    const bot = startSwitchboard("start", env);
    running.push(bot);
    await waitUntil(() => bot.stderr().includes("Switchboard is running"), "the bot to start");
    return bot;
  }

  /** The bot's gateway session is in the store: a process started after it can resume it. */
  async function sessionStored(count: number): Promise<void> {
    const store = await openStore(env.STORE_URL!);
    try {
      const state = createState(store);
      for (const until = Date.now() + 10_000; (await storedGatewaySessions(state)).length < count; ) {
        if (Date.now() > until) throw new Error("timed out waiting for the gateway session in the store");
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await store.close();
    }
  }

  /** A process started now answers the mention `id`, which the stopped one had received: once, from Discord's replay. */
  async function answeredOnceByTheNext(id: string, question: string): Promise<void> {
    const next = await started();
    await waitUntil(
      () => answerIn(id).includes(`ANSWER TO: ${question}`),
      `the answer to "${question}", which the stopped process had received`,
      30_000,
    );
    expect(next.stderr()).toContain("reading the messages a stopped process received");
    expect(await ledgerAfter(env)).toEqual([]);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(answerIn(id)).toEqual([`ANSWER TO: ${question}`]);
    expect(questions(question)).toBe(1);
  }

  async function killedFrozen(bot: Running): Promise<void> {
    bot.child.kill("SIGKILL");
    await bot.exited;
    running.splice(running.indexOf(bot), 1);
  }

  it("answers after the restart a mention the killed process had received and never read", async () => {
    const first = await started();
    await sessionStored(1);
    first.child.kill("SIGSTOP");
    const asked = discord.userMessage(discord.state.general, "are you still there?", { mentionsBot: true });
    await new Promise((r) => setTimeout(r, 300));
    await killedFrozen(first);
    expect(questions("are you still there?")).toBe(0);

    await answeredOnceByTheNext(asked.id, "are you still there?");
  }, 60_000);

  it("answers a replayed message it had answered already no second time, and the one it had not once", async () => {
    const first = await started();
    const answered = discord.userMessage(discord.state.general, "first question", { mentionsBot: true });
    await waitUntil(() => answerIn(answered.id).includes("ANSWER TO: first question"), "the first answer");
    expect(await ledgerAfter(env)).toEqual([]);
    await sessionStored(1);
    // The replay goes back past the answered mention, as when the process dies before its resume point moves on.
    discord.rewindResumes(1_000);
    first.child.kill("SIGSTOP");
    const unread = discord.userMessage(discord.state.general, "second question", { mentionsBot: true });
    await new Promise((r) => setTimeout(r, 300));
    await killedFrozen(first);

    const second = await started();
    await waitUntil(
      () => answerIn(unread.id).includes("ANSWER TO: second question"),
      "the answer to the unread mention",
      30_000,
    );
    expect(await ledgerAfter(env)).toEqual([]);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(second.stderr()).toContain("reading the messages a stopped process received");
    expect(answerIn(answered.id)).toEqual(["ANSWER TO: first question"]);
    expect(answerIn(unread.id)).toEqual(["ANSWER TO: second question"]);
    expect(questions("first question")).toBe(1);
    expect(questions("second question")).toBe(1);
  }, 60_000);

  it("answers after the restart a mention that came while the only process was stopping", async () => {
    const first = await started();
    const slow = discord.userMessage(discord.state.general, "take your time", { mentionsBot: true });
    await waitUntil(() => questions("take your time") === 1, "the slow question to reach the model");
    await sessionStored(1);
    // A stopping process takes no new turn, but stays connected until its turns in flight are written.
    first.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 500));
    const late = discord.userMessage(discord.state.general, "one more thing", { mentionsBot: true });
    // Discord waits 3 s for a command's answer and never sends it again: the person is told to retry.
    const command = discord.slash(
      "ask",
      { question: "and now?" },
      discord.state.general,
      discord.state.alice.id,
    );
    await first.exited;
    running.splice(running.indexOf(first), 1);
    expect(answerIn(slow.id).join("")).toContain("and so on and so on");
    expect(questions("one more thing")).toBe(0);
    // Left on purpose, at once: not found only once the lock of a process gone has expired.
    expect(first.stderr()).toContain(
      "left the messages that came while stopping to the next Discord process",
    );
    expect(command.callbacks).toEqual([4]);
    expect(discord.state.findMessage(command.originalId ?? "")?.content).toBe(RESTARTING);

    await answeredOnceByTheNext(late.id, "one more thing");
    expect(questions("take your time")).toBe(1);
  }, 60_000);
});
