import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { needsServer, serverUrl } from "../../src/store/testing.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { type EmuMessage, SlackEmulator } from "../emulators/slack/index.js";
import { SLACK_PER_CHANNEL_LIMITS } from "../emulators/slack/rate-limit.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { killStarted, type Running, startSwitchboard, waitUntil } from "../support/process.js";
import { deleteAppKeys, redisDatabase } from "../support/redis-databases.js";

const answerTo = (question: string) => `${"word ".repeat(20)}END of ${question}.`;
const THREADS = 20;
const PER_THREAD = 5;

describe(
  "three replicas on Redis, Slack spreading events over their connections",
  needsServer("redis"),
  () => {
    const url = redisDatabase(serverUrl("redis"), 3);
    let llm: LlmEmulator;
    let slack: SlackEmulator;
    let dir: string;
    let replicas: Running[] = [];

    beforeAll(async () => {
      await deleteAppKeys(url);
      llm = await LlmEmulator.start({
        responder: (req) =>
          isTitleRequest(req)
            ? { text: "Spread" }
            : lastUserText(req).includes("endless")
              ? { text: "word ".repeat(400), chunkSize: 5, delayMs: 50 }
              : {
                  text: answerTo(lastUserText(req).replace(/^\[[^\]]*\]\s*/, "")),
                  chunkSize: 6,
                  delayMs: 40,
                },
      });
      slack = await SlackEmulator.start({ rateLimits: SLACK_PER_CHANNEL_LIMITS });
      for (let i = 2; i <= THREADS; i++) slack.state.addChannel(`C${i}`, `room-${i}`);
      dir = scratchConfig(
        "llm:\n  maxRetries: 0\nslack:\n  updateIntervalMs: 1000\n  nativeStreaming: false\n",
      );
      const env = appEnv({ dir, llm, slack, store: url });
      replicas = [0, 1, 2].map(() => startSwitchboard("start", env));
      await waitUntil(
        () => replicas.every((r) => r.stderr().includes("Switchboard is running")),
        "three replicas to start",
      );
      await waitUntil(() => slack.delivery.sockets.size === 3, "three Socket Mode connections");
    }, 60_000);

    afterAll(async () => {
      for (const r of replicas) r.child.kill("SIGTERM");
      await Promise.all(replicas.map((r) => r.exited));
      killStarted();
      await slack?.stop();
      await llm?.close();
      await deleteAppKeys(url);
      rmSync(dir, { recursive: true, force: true });
    });

    it("answers every message exactly once, never two answers of one thread at a time, with 10 % redelivered", async () => {
      const roots: EmuMessage[] = [];
      const sent: { thread: number; text: string }[] = [];
      let redelivered = 0;
      for (let round = 0; round < PER_THREAD; round++) {
        for (let t = 0; t < THREADS; t++) {
          const text = `t${t}-m${round}`;
          // Every tenth message twice: the copy goes out on the next connection, another replica.
          const times = (t * PER_THREAD + round) % 10 === 0 ? 2 : 1;
          if (times === 2) redelivered++;
          if (round === 0) roots[t] = slack.mention(`C${t + 1}`, "U_BOB", text, { times });
          else slack.post(`C${t + 1}`, "U_BOB", text, { threadTs: roots[t]!.ts, times });
          sent.push({ thread: t, text });
        }
        await new Promise((r) => setTimeout(r, 400));
      }
      expect(redelivered).toBe((THREADS * PER_THREAD) / 10);

      const joined = (t: number) =>
        slack
          .botReplies(`C${t + 1}`, roots[t]!.ts)
          .map((r) => r.text)
          .join("");
      const answeredOnce = (m: { thread: number; text: string }) =>
        joined(m.thread).split(answerTo(m.text)).length - 1 === 1;
      try {
        await waitUntil(() => sent.every(answeredOnce), "every message to be answered", 90_000);
      } catch (error) {
        // Say which and keep the replicas' logs: a loss under load is otherwise unexplained.
        const logs = mkdtempSync(join(tmpdir(), "replicas-slack-"));
        for (const [i, r] of replicas.entries()) writeFileSync(join(logs, `replica-${i}.log`), r.stderr());
        const missing = sent.filter((m) => !answeredOnce(m)).map((m) => m.text);
        throw new Error(
          `${(error as Error).message}: not answered once: ${missing.join(", ")}; logs in ${logs}`,
        );
      }
      await new Promise((r) => setTimeout(r, 1_500));

      for (let t = 0; t < THREADS; t++) {
        const mine = sent.filter((m) => m.thread === t);
        for (const m of mine) expect(answeredOnce(m), m.text).toBe(true);
        // Nothing but the answers: no second copy, no note.
        expect(joined(t).length).toBe(mine.map((m) => answerTo(m.text)).join("").length);
      }
      const asked = llm.requests.filter((r) => !isTitleRequest(r));
      for (const m of sent)
        expect(
          asked.filter((r) => lastUserText(r).endsWith(m.text)),
          m.text,
        ).toHaveLength(1);
      // One turn of a thread at a time, across the three processes.
      for (let t = 0; t < THREADS; t++) {
        const turns = asked
          .filter((r) => /\bt(\d+)-m\d+$/.exec(lastUserText(r))?.[1] === String(t))
          .sort((a, b) => a.receivedAt! - b.receivedAt!);
        for (let i = 1; i < turns.length; i++) {
          expect(turns[i]!.receivedAt!, `thread ${t}`).toBeGreaterThanOrEqual(turns[i - 1]!.endedAt!);
        }
      }
      // The three replicas shared the work (Slack spread the events over their connections).
      const byReplica = replicas.map((r) => (r.stderr().match(/"msg":"turn"/g) ?? []).length);
      console.info(`spread over three replicas: turns ${byReplica.join(", ")}; ${redelivered} redelivered`);
    }, 150_000);

    it("stops an answer whichever replica the stop command reaches", async () => {
      // Slack hands each command to one of the three connections: most reach a replica
      // that is not writing the answer. Three answers in turn, each stopped by its asker.
      for (let i = 0; i < 3; i++) {
        const root = slack.mention("C1", "U_ALICE", `an endless answer ${i}`);
        const text = () =>
          slack
            .botReplies("C1", root.ts)
            .map((r) => r.text)
            .join("");
        await waitUntil(() => text().length > 0, "the answer to begin", 20_000);
        slack.slash("/switchboard", "stop", "U_ALICE", "C1");
        await waitUntil(() => text().endsWith("Stopped by alice."), `answer ${i} to stop`, 15_000);
        expect(text().length).toBeLessThan("word ".repeat(400).length);
      }
    }, 90_000);
  },
);
