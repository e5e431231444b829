/** What the replica benchmarks share: the built app as replicas on Redis against the Slack and LLM emulators. */
import { rmSync } from "node:fs";
import { createClient } from "@redis/client";
import { openStore } from "../../src/store/index.js";
import { deleteRedisKeys } from "../../src/store/testing.js";
import type { LlmEmulator, RecordedRequest } from "../../test/emulators/llm/index.js";
import type { SlackEmulator } from "../../test/emulators/slack/index.js";
import { appEnv } from "../../test/support/app-env.js";
import { scratchConfig } from "../../test/support/chat-process.js";
import { isTitleRequest, lastUserText } from "../../test/support/llm-text.js";
import { type AppBuild, repoRoot } from "./load-build.js";
import { type BotProcess, freePort, spawnBot, waitReady } from "./load-process.js";

/** The benchmarks' Redis database: the tests' one plus 2 (see the README's test section). */
export const redisUrl = (() => {
  const u = new URL(process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/9");
  u.pathname = `/${Number(u.pathname.slice(1) || "0") + 2}`;
  return u.toString();
})();

/** Deletes the app's keys in the benchmarks' database. */
export async function cleanRedis(): Promise<void> {
  const store = await openStore(redisUrl);
  try {
    await deleteRedisKeys(store.redis!, `${store.namespace}:*`);
  } finally {
    await store.close();
  }
}

/** Commands the Redis server has processed so far (all clients). */
export async function redisCommands(): Promise<number> {
  const client = createClient({ url: redisUrl });
  await client.connect();
  try {
    const info = await client.info("stats");
    return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0);
  } finally {
    await client.close();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves with the probe's first truthy value; throws naming `what` after `timeoutMs`. */
export async function until<T>(
  probe: () => T | undefined | false,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/**
 * `words` words, then the question's name and a full stop: each answer can be told apart
 * and checked whole (the stop keeps "m1"'s answer from matching inside "m10"'s).
 */
export const answer = (question: string, words: number) => `${"word ".repeat(words)}END of ${question}.`;

export function model(words: (question: string) => number, delayMs: number) {
  return (req: RecordedRequest) => {
    if (isTitleRequest(req)) return { text: "Bench" };
    const q = lastUserText(req).replace(/^\[[^\]]*\]\s*/, "");
    return { text: answer(q, words(q)), chunkSize: 6, delayMs };
  };
}

export interface Replica {
  proc: BotProcess;
  dir: string;
}

export async function startReplica(
  build: AppBuild,
  llm: LlmEmulator,
  slack: SlackEmulator,
  store: string | undefined,
  yaml = "",
): Promise<Replica> {
  const port = await freePort();
  const dir = scratchConfig(`llm:\n  maxRetries: 0\nhealth:\n  host: 127.0.0.1\n  port: ${port}\n${yaml}`);
  const env = {
    ...appEnv({ dir, llm, slack, ...(store ? { store } : {}) }),
    LOG_LEVEL: process.env.BENCH_BOT_LOG_LEVEL ?? "error",
  };
  const proc = spawnBot("Switchboard", [build.main, "start"], env, repoRoot);
  await waitReady(proc, async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, 60_000);
  return { proc, dir };
}

export async function stop(replicas: Replica[]): Promise<void> {
  await Promise.all(replicas.map((r) => r.proc.kill()));
  for (const r of replicas) rmSync(r.dir, { recursive: true, force: true });
}

export function channels(slack: SlackEmulator, n: number, prefix: string): string[] {
  return Array.from({ length: n }, (_, i) => {
    const id = `${prefix}${i}`;
    slack.state.addChannel(id, `${prefix.toLowerCase()}-${i}`);
    return id;
  });
}
