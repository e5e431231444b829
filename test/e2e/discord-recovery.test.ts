import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiscordEmulator } from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { ledgerAfter, waitingIn } from "../support/ledger.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { killStarted, startSwitchboard, waitUntil } from "../support/process.js";
import { expectStoreIntact } from "../support/store-integrity.js";

/** An answer that takes about 10 s to stream: long enough to be killed in the middle of. */
const SLOW_ANSWER = `${"chunk ".repeat(250)}THE-END`;

function responder(req: RecordedRequest) {
  if (isTitleRequest(req)) return { text: "Recovery" };
  if (lastUserText(req).includes("and a second one")) return { text: "THE SECOND ANSWER" };
  return { text: SLOW_ANSWER, chunkSize: 6, delayMs: 40 };
}

describe("kill -9 mid-answer in Discord", () => {
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    llm = await LlmEmulator.start({ responder });
    // Discord's limits (5 writes per 5 s per channel), run 10x faster.
    discord = await DiscordEmulator.start({ rateLimits: { speed: 10 } });
    // A short grace: a SIGTERM stops the answer under way rather than waiting for it.
    dir = scratchConfig(
      "llm:\n  maxRetries: 0\ndiscord:\n  editIntervalMs: 250\nshutdown:\n  graceMs: 500\n",
    );
    env = appEnv({ dir, llm, discord });
  });

  afterAll(async () => {
    killStarted();
    await discord?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the restarted bot finishes the cut-off answer in its own message, asking the model again, posting nothing else", async () => {
    const first = startSwitchboard("start", env);
    await waitUntil(() => first.stderr().includes("Switchboard is running"), "the bot to start");
    const asked = discord.userMessage(discord.state.general, "a slow answer please", { mentionsBot: true });
    // The bot answers in a thread opened from the question (thread id = message id).
    const thread = asked.id;
    const cut = () => discord.botMessages(thread)[0];
    // A message written on after its first write: its address is in the store by then.
    await waitUntil(() => (cut()?.edits.length ?? 0) >= 2, "the answer to be streaming");
    first.child.kill("SIGKILL");
    await first.exited;
    const killed = Date.now();
    const before = { count: discord.messages(thread).length, id: cut()!.id, text: cut()!.content };
    expect(before.text).not.toContain("THE-END");
    const requestsBefore = discord.requests.length;
    const questions = () => llm.requests.filter((r) => !isTitleRequest(r)).length;
    expect(questions()).toBe(1);

    const second = startSwitchboard("start", env);
    try {
      await waitUntil(
        () => cut()?.content === SLOW_ANSWER,
        "the whole answer in the cut-off message",
        60_000,
      );
      console.info(`discord takeover: answer complete ${Date.now() - killed} ms after the kill`);
      expect(cut()?.id).toBe(before.id);
      expect(questions()).toBe(2);
      // Nothing else lands in the thread, not even a moment later.
      await new Promise((r) => setTimeout(r, 1_000));
      expect(discord.messages(thread)).toHaveLength(before.count);
      expect(cut()?.content).toBe(SLOW_ANSWER);
      const posts = discord.requests
        .slice(requestsBefore)
        .filter((r) => r.method === "POST" && r.path.endsWith(`/channels/${thread}/messages`));
      expect(posts).toEqual([]);
      expect(await ledgerAfter(env)).toEqual([]);
    } finally {
      second.child.kill("SIGTERM");
      await second.exited;
    }
    await expectStoreIntact(env.STORE_URL!);
  }, 90_000);

  /** The bot started, streaming a slow answer, with a second message of the thread kept in the store behind it. */
  async function waitingBehindSlowAnswer() {
    const first = startSwitchboard("start", env);
    await waitUntil(() => first.stderr().includes("Switchboard is running"), "the bot to start");
    const asked = discord.userMessage(discord.state.general, "a slow answer please", { mentionsBot: true });
    const thread = asked.id;
    const answers = () => discord.botMessages(thread).map((m) => m.content);
    await waitUntil(
      () => (discord.botMessages(thread)[0]?.edits.length ?? 0) >= 2,
      "the answer to be streaming",
    );
    // Acknowledged by the bot (it will not come again from Discord) and waiting for the first answer.
    discord.userMessage(thread, "and a second one");
    for (const until = Date.now() + 20_000; (await waitingIn(env)).length === 0; ) {
      if (Date.now() > until) throw new Error("timed out waiting for the message to be kept in the store");
      await new Promise((r) => setTimeout(r, 100));
    }
    return { first, answers };
  }

  it("answers after the restart a message that waited behind the cut-off answer when the bot was killed", async () => {
    const { first, answers } = await waitingBehindSlowAnswer();
    expect(await waitingIn(env)).toMatchObject([
      { input: { text: expect.stringContaining("and a second one") } },
    ]);
    first.child.kill("SIGKILL");
    await first.exited;
    expect(answers().join("\n")).not.toContain("THE SECOND ANSWER");

    const second = startSwitchboard("start", env);
    try {
      await waitUntil(
        () => answers().includes(SLOW_ANSWER) && answers().includes("THE SECOND ANSWER"),
        "both answers after the restart",
        60_000,
      );
      await new Promise((r) => setTimeout(r, 1_000));
      // Each once: the waiting message was answered by the restarted bot alone, and only once.
      expect(answers().filter((t) => t === "THE SECOND ANSWER")).toHaveLength(1);
      expect(answers().indexOf(SLOW_ANSWER)).toBeLessThan(answers().indexOf("THE SECOND ANSWER"));
      expect(await ledgerAfter(env)).toEqual([]);
      expect(await waitingIn(env)).toEqual([]);
    } finally {
      second.child.kill("SIGTERM");
      await second.exited;
    }
  }, 90_000);

  it("gives a message waiting at a SIGTERM the restart note, and the next start does not answer it too", async () => {
    const { first, answers: texts } = await waitingBehindSlowAnswer();
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    // The cut-off answer ends with the note, and the waiting message has one of its own.
    expect(texts().filter((t) => t.endsWith("Interrupted by a restart; ask again."))).toHaveLength(2);
    expect(await waitingIn(env)).toEqual([]);

    const second = startSwitchboard("start", env);
    try {
      await waitUntil(() => second.stderr().includes("Switchboard is running"), "the bot to start again");
      // Three rounds of the watch that would find a message left behind.
      await new Promise((r) => setTimeout(r, 6_500));
      expect(texts().join("\n")).not.toContain("THE SECOND ANSWER");
    } finally {
      second.child.kill("SIGTERM");
      await second.exited;
    }
  }, 90_000);
});
