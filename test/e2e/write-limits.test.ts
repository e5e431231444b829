/**
 * The platforms' write limits at their real speed, through the real app: many threads
 * answered at once stay inside every limit (no 429 is ever needed), every answer arrives
 * whole, and when a workspace's edits are spent the answers go on in new messages
 * instead of waiting a minute. The other e2e suites shorten the platforms' windows;
 * these do not, since the write scheduler's budgets are what they test.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DiscordEmulator, waitFor as waitForDiscord } from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../emulators/llm/index.js";
import { SlackEmulator, waitFor } from "../emulators/slack/index.js";
import { type RunningApp, startWithEverything } from "../support/app-env.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";

/** Each question's answer: its number in 30 words, streamed for about 1.5 s. */
const answerTo = (n: string) => Array.from({ length: 30 }, (_, i) => `answer${n}-word${i + 1}`).join(" ");
const said = (req: RecordedRequest) => lastUserText(req).replace(/^\[[^\]]*\]\s*/, "");

function scenario(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "A question" };
  const n = /question (\d+)/.exec(said(req))?.[1] ?? "0";
  return { text: answerTo(n), chunkSize: 20, delayMs: 50 };
}

/** Text without whitespace: splitting into messages may move spaces, never words. */
const bare = (s: string) => s.replace(/\s+/g, "");

/** Whether the bot's messages in a Discord channel (or thread), joined, are question `n`'s whole answer. */
const wholeIn = (emulator: DiscordEmulator, channelId: string, n: number) =>
  bare(
    emulator
      .botMessages(channelId)
      .map((m) => m.content)
      .join(""),
  ) === bare(answerTo(String(n)));

let llm: LlmEmulator | undefined;
let running: RunningApp | undefined;
let slack: SlackEmulator | undefined;
let discord: DiscordEmulator | undefined;

afterEach(async () => {
  await running?.stop();
  await slack?.stop();
  await discord?.stop();
  await llm?.close();
  running = undefined;
  slack = undefined;
  discord = undefined;
});

describe("Slack at its real limits", () => {
  it("answers 12 mentions in one channel at once, every answer whole, without meeting a single 429", async () => {
    llm = await LlmEmulator.start({ responder: scenario });
    slack = await SlackEmulator.start();
    // Post + update: the first messages meet chat.postMessage's limit per channel.
    running = await startWithEverything("llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: false\n", {
      llm,
      slack,
    });
    const asked = Array.from({ length: 12 }, (_, i) => slack!.mention("C1", "U_ALICE", `question ${i}`));
    const whole = (i: number) =>
      bare(
        slack!
          .botReplies("C1", asked[i]!.ts)
          .map((r) => r.text)
          .join(""),
      ) === bare(answerTo(String(i)));
    // chat.postMessage takes about one message a second per channel: 12 first messages need ~10 s.
    await waitFor(() => asked.every((_, i) => whole(i)), { timeoutMs: 40_000 });
    await running.app.dispatcher.settled();
    expect(slack.rates.limited).toEqual([]);
  }, 60_000);

  it("goes on in new messages when the workspace's chat.update budget is spent, instead of waiting for it", async () => {
    llm = await LlmEmulator.start({ responder: scenario });
    // Four updates a minute for the whole workspace: spent within the first second.
    slack = await SlackEmulator.start({ rateLimits: { perMinute: { "chat.update": 4 } } });
    running = await startWithEverything("llm:\n  maxRetries: 0\nslack:\n  nativeStreaming: false\n", {
      llm,
      slack,
    });
    const channels = ["C1", "C2", "C3", "C4", "C5", "C6"];
    for (const c of channels) slack.state.addChannel(c, `limits-${c}`);
    const started = Date.now();
    const asked = channels.map((c, i) => slack!.mention(c, "U_BOB", `question ${i}`));
    const texts = (i: number) => slack!.botReplies(channels[i]!, asked[i]!.ts).map((r) => r.text);
    await waitFor(() => asked.every((_, i) => bare(texts(i).join("")) === bare(answerTo(String(i)))), {
      timeoutMs: 30_000,
    });
    // Slack's Retry-After for the spent minute is up to 60 s: nobody waited for it.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(slack.rates.limited.some((l) => l.method === "chat.update")).toBe(true);
    expect(asked.filter((_, i) => texts(i).length > 1).length).toBeGreaterThan(0);
    expect(slack.rates.limited.filter((l) => l.method === "chat.postMessage")).toEqual([]);
  }, 60_000);
});

describe("Discord at its real limits", () => {
  for (const headers of [true, false]) {
    it(`answers 10 mentions in one channel at once, inside 5 writes per 5 s per thread, without a 429${headers ? "" : " (no rate-limit headers)"}`, async () => {
      llm = await LlmEmulator.start({ responder: scenario });
      discord = await DiscordEmulator.start({ rateLimits: { threads: 20, headers } });
      running = await startWithEverything("llm:\n  maxRetries: 0\n", { llm, discord });
      const asked = Array.from({ length: 10 }, (_, i) =>
        discord!.userMessage(discord!.state.general, `question ${i}`, { mentionsBot: true }),
      );
      const whole = (i: number) => wholeIn(discord!, asked[i]!.id, i);
      await waitForDiscord(() => asked.every((_, i) => whole(i)), { timeoutMs: 30_000 });
      await running.app.dispatcher.settled();
      expect(discord.limiter.hits).toEqual([]);
      // Every thread's message writes, as Discord took them: never 6 within 5 s.
      for (const m of asked) {
        const writes = discord.requests
          .filter(
            (r) => r.status < 300 && r.method !== "GET" && r.path.includes(`/channels/${m.id}/messages`),
          )
          .map((r) => r.at);
        for (const [k, at] of writes.entries()) {
          expect(writes.filter((t) => t >= at && t < at + 5_000).length, `thread ${k}`).toBeLessThanOrEqual(
            5,
          );
        }
      }
    }, 60_000);
  }

  it("answers in the channel when Discord will open no thread there for minutes", async () => {
    llm = await LlmEmulator.start({ responder: scenario });
    // The emulator's own guess at Discord's unpublished limit: 5 threads per channel per 5 min.
    discord = await DiscordEmulator.start({ rateLimits: { threads: 5 } });
    running = await startWithEverything("llm:\n  maxRetries: 0\n", { llm, discord });
    const { general } = discord.state;
    const asked = Array.from({ length: 7 }, (_, i) =>
      discord!.userMessage(general, `question ${i}`, { mentionsBot: true }),
    );
    const started = Date.now();
    const inThread = (i: number) => wholeIn(discord!, asked[i]!.id, i);
    const inChannel = (i: number) =>
      discord!.botMessages(general).some((m) => bare(m.content) === bare(answerTo(String(i))));
    await waitForDiscord(() => asked.every((_, i) => inThread(i) || inChannel(i)), { timeoutMs: 30_000 });
    // Nobody waited out the 5 minutes; five answers have their thread, the others the channel.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(asked.filter((_, i) => inThread(i))).toHaveLength(5);
    expect(asked.filter((_, i) => inChannel(i))).toHaveLength(2);
    // Each answer in the channel replies to its question, so a busy channel shows whose it is.
    for (const [i, m] of asked.entries()) {
      const answer = discord.botMessages(general).find((b) => bare(b.content) === bare(answerTo(String(i))));
      if (answer) expect(answer.replyTo, `answer ${i}`).toBe(m.id);
    }
    expect(discord.limiter.hits.filter((h) => h.kind === "thread").length).toBeLessThanOrEqual(2);
    await running.app.dispatcher.settled();
    // Titles are made for the threads only: an answer in the channel has none to rename.
    expect(llm.requests.filter(isTitleRequest)).toHaveLength(5);
  }, 60_000);
});
