import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/index.js";
import { createState } from "../../src/store/state.js";
import { needsServer, serverUrl } from "../../src/store/testing.js";
import { DiscordEmulator, type StoredMessage } from "../emulators/discord/index.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { killStarted, type Running, startSwitchboard, waitUntil } from "../support/process.js";
import { deleteAppKeys, redisDatabase } from "../support/redis-databases.js";

async function withState<T>(
  url: string,
  fn: (state: ReturnType<typeof createState>) => Promise<T>,
): Promise<T> {
  const store = await openStore(url);
  try {
    return await fn(createState(store));
  } finally {
    await store.close();
  }
}

const answerTo = (q: string) => `${"word ".repeat(30)}END of ${q}.`;

function responder(req: RecordedRequest) {
  if (isTitleRequest(req)) return { text: "Crowd" };
  const asked = lastUserText(req).replace(/^\[[^\]]*\]\s*/, "");
  return { text: answerTo(asked), chunkSize: 6, delayMs: 30 };
}

const CROWD = 12;

describe(
  "two Discord replicas on one gateway session, the one that took a crowd killed -9",
  needsServer("redis"),
  () => {
    const url = redisDatabase(serverUrl("redis"), 5);
    let llm: LlmEmulator;
    let discord: DiscordEmulator;
    let dir: string;
    let env: NodeJS.ProcessEnv;
    let replicas: Running[] = [];

    beforeAll(async () => {
      await deleteAppKeys(url);
      llm = await LlmEmulator.start({ responder });
      // A thread per mention, all in one channel: Discord publishes no limit on opening them.
      discord = await DiscordEmulator.start({ rateLimits: { threads: 10_000 } });
      dir = scratchConfig("llm:\n  maxRetries: 0\ndiscord:\n  editIntervalMs: 250\n");
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

    it("answers every message once, in its thread: the ones it had stored, and the ones it had only claimed", async () => {
      const first = startSwitchboard("start", env);
      await waitUntil(() => first.stderr().includes("Switchboard is running"), "the first replica to start");
      const second = startSwitchboard("start", env);
      replicas = [first, second];
      await waitUntil(
        () => second.stderr().includes("Switchboard is running"),
        "the second replica to start",
      );
      await waitUntil(() => discord.gateway.connected() === 2, "two gateway sessions");
      // The second replica sees each message 400 ms after the first: the first claims each one.
      discord.gateway.lag(1, 400);
      // Half the crowd first: the first replica stores them and begins their answers.
      const sent: { q: string; m: StoredMessage }[] = [];
      const ask = (i: number) => {
        const q = `q${i}`;
        sent.push({ q, m: discord.userMessage(discord.state.general, q, { mentionsBot: true }) });
      };
      for (let i = 1; i <= CROWD / 2; i++) ask(i);
      await waitUntil(
        () => sent.every((x) => discord.botMessages(x.m.id).length > 0),
        "the first answers to begin",
      );
      // Then the other half, and the first is killed as Discord takes the first of their
      // threads' openings (each comes right after its message's claim): these messages are on
      // their way to the store, and the first half's answers are cut off.
      const openings = () =>
        discord.requests.filter((r) => r.method === "POST" && r.path.endsWith("/threads")).length;
      const before = openings();
      const requests = discord.requests;
      const record = requests.push.bind(requests);
      requests.push = (...items) => {
        const n = record(...items);
        if (openings() > before && first.child.exitCode === null) first.child.kill("SIGKILL");
        return n;
      };
      for (let i = CROWD / 2 + 1; i <= CROWD; i++) ask(i);
      await first.exited;
      // What the dead replica left: a claim to open the message's thread, held once the message was stored.
      const left = await withState(url, (state) =>
        Promise.all(sent.map((x) => state.get<string>(`dedupe:discord:thread-for:${x.m.id}`))),
      );
      const caught = left.filter((v) => typeof v === "string" && !v.startsWith("held:")).length;
      const stored = left.filter((v) => typeof v === "string" && v.startsWith("held:")).length;
      const answers = (x: { m: StoredMessage }) => discord.botMessages(x.m.id).map((b) => b.content);
      const whole = (x: { q: string; m: StoredMessage }) => answers(x).join("") === answerTo(x.q);
      await waitUntil(() => sent.every(whole), "every answer, once and whole", 60_000).catch((err) => {
        const logs = mkdtempSync(join(tmpdir(), "discord-replica-kill-"));
        writeFileSync(
          join(logs, "answers.txt"),
          sent.map((x, i) => `${x.q}: ${JSON.stringify(answers(x))} left=${left[i]}`).join("\n"),
        );
        writeFileSync(join(logs, "first.log"), first.stderr());
        writeFileSync(join(logs, "second.log"), second.stderr());
        throw new Error(`${(err as Error).message}; logs in ${logs}`);
      });
      await new Promise((r) => setTimeout(r, 1_000));
      console.info(`discord replica kill -9: ${caught} messages claimed and not stored, ${stored} stored`);
      // Some were caught between their claim and the store: only the living replica's copy had them.
      expect(caught).toBeGreaterThan(0);
      for (const x of sent) expect(answers(x)).toEqual([answerTo(x.q)]);
      expect(discord.botMessages(discord.state.general)).toEqual([]);
      // One it had only claimed never reached the model before the kill: it was asked once, by the other.
      const asked = llm.requests
        .filter((r) => !isTitleRequest(r))
        .map((r) => lastUserText(r).replace(/^\[[^\]]*\]\s*/, ""));
      sent.forEach((x, i) => {
        const v = left[i];
        if (typeof v === "string" && !v.startsWith("held:"))
          expect(asked.filter((t) => t === x.q)).toHaveLength(1);
      });
    }, 90_000);
  },
);
