import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/index.js";
import { deleteRedisKeys, needsServer, serverUrl } from "../../src/store/testing.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { type EmuMessage, SlackEmulator } from "../emulators/slack/index.js";
import { SLACK_PER_CHANNEL_LIMITS } from "../emulators/slack/rate-limit.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { ledgerOf } from "../support/ledger.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { killStarted, type Running, startSwitchboard, waitUntil } from "../support/process.js";

/**
 * A database of its own beside the tests' one: the bot writes under its default
 * namespace, and the other replica test in the run (test/e2e/replicas.test.ts) does too.
 */
function ownDatabase(url: string): string {
  const u = new URL(url);
  const db = Number(u.pathname.slice(1) || "0");
  u.pathname = `/${db + 1}`;
  return u.toString();
}

async function deleteAppKeys(url: string): Promise<void> {
  const store = await openStore(url);
  try {
    await deleteRedisKeys(store.redis!, `${store.namespace}:*`);
  } finally {
    await store.close();
  }
}

/** About 9 s of streaming per answer, each answer naming its question at its end. */
const answerTo = (question: string) => `${"word ".repeat(150)}END of ${question}`;

function responder(req: RecordedRequest) {
  if (isTitleRequest(req)) return { text: "Takeover" };
  return { text: answerTo(lastUserText(req).replace(/^\[[^\]]*\]\s*/, "")), chunkSize: 6, delayMs: 70 };
}

describe("three replicas on Redis: kill -9 of the one streaming five answers", needsServer("redis"), () => {
  const url = ownDatabase(serverUrl("redis"));
  let llm: LlmEmulator;
  let slack: SlackEmulator;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    await deleteAppKeys(url);
    llm = await LlmEmulator.start({ responder });
    // Five threads in five channels, limited per channel. In Slack's documented workspace
    // mode (chat.update 50 a minute across all channels) the dead replica has spent the
    // minute's edits, and the takers wait out Slack's Retry-After: about a minute.
    slack = await SlackEmulator.start({ rateLimits: SLACK_PER_CHANNEL_LIMITS });
    for (let i = 2; i <= 5; i++) slack.state.addChannel(`C${i}`, `room-${i}`);
    dir = scratchConfig("llm:\n  maxRetries: 0\nslack:\n  updateIntervalMs: 250\n  nativeStreaming: false\n");
    env = { ...appEnv({ dir, llm, slack, store: url }), LOG_LEVEL: "info" };
  });

  afterAll(async () => {
    killStarted();
    await slack?.stop();
    await llm?.close();
    await deleteAppKeys(url);
    rmSync(dir, { recursive: true, force: true });
  });

  const running = (r: Running) => r.stderr().includes("Switchboard is running");

  it("the other replicas finish each answer in its own message, once, with the complete text", async () => {
    // The first replica alone gets the five questions (Slack spreads events over the connections it has).
    const doomed = startSwitchboard("start", env);
    await waitUntil(() => running(doomed), "the first replica to start", 30_000);
    const questions = ["q1", "q2", "q3", "q4", "q5"].map((q, i) => ({
      q,
      m: slack.mention(`C${i + 1}`, "U_BOB", q),
      channel: `C${i + 1}`,
    }));
    const replyOf = ({ channel, m }: { channel: string; m: EmuMessage }) => slack.botReplies(channel, m.ts);
    await waitUntil(
      () => questions.every((x) => (replyOf(x)[0]?.edits.length ?? 0) >= 1),
      "all five answers to be streaming",
      30_000,
    );
    const others = [startSwitchboard("start", env), startSwitchboard("start", env)];
    await waitUntil(() => others.every(running), "the other two replicas to start", 30_000);

    const before = questions.map((x) => ({ ts: replyOf(x)[0]!.ts, text: replyOf(x)[0]!.text }));
    expect(before.every((b) => !b.text.includes("END of"))).toBe(true);
    doomed.child.kill("SIGKILL");
    await doomed.exited;
    const killed = Date.now();

    const complete = (i: number) => replyOf(questions[i]!)[0]?.text === answerTo(questions[i]!.q);
    const doneAt: number[] = [];
    await waitUntil(
      () => {
        questions.forEach((_, i) => {
          if (doneAt[i] === undefined && complete(i)) doneAt[i] = Date.now() - killed;
        });
        return doneAt.filter((t) => t !== undefined).length === questions.length;
      },
      "every answer to be complete",
      60_000,
    );
    console.info(`takeover on Redis: answers complete ${doneAt.join(", ")} ms after the kill`);
    expect(Math.max(...doneAt)).toBeLessThan(15_000);

    // One message per answer, the one the dead replica had started, and nothing else later.
    await new Promise((r) => setTimeout(r, 1_500));
    questions.forEach((x, i) => {
      expect(replyOf(x).map((r) => r.ts)).toEqual([before[i]!.ts]);
      expect(replyOf(x)[0]!.text).toBe(answerTo(x.q));
    });
    // Each question reached the model twice: once on the dead replica, once on its taker.
    for (const { q } of questions) {
      const asked = llm.requests.filter((r) => !isTitleRequest(r) && lastUserText(r).endsWith(q));
      expect(asked).toHaveLength(2);
    }
    const takers = others.map((o) => (o.stderr().match(/taking a turn over/g) ?? []).length);
    expect(takers.reduce((a, b) => a + b, 0)).toBe(questions.length);
    expect(await ledgerOf(env)).toEqual([]);

    for (const o of others) o.child.kill("SIGTERM");
    const codes = await Promise.all(others.map((o) => o.exited));
    expect(codes).toEqual([0, 0]);
  }, 120_000);
});
