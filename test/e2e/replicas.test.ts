import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { openStore } from "../../src/store/index.js";
import { deleteRedisKeys, needsServer, serverUrl } from "../../src/store/testing.js";
import { DiscordEmulator, waitFor } from "../emulators/discord/index.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { untilQuiet } from "../support/quiet.js";

const REDIS_URL = serverUrl("redis");

/**
 * The app writes under its default namespace, "switchboard:", in the tests' database; no
 * other test does. Only those keys are deleted, never the whole database (others' data).
 */
async function deleteAppKeys(): Promise<void> {
  const store = await openStore(REDIS_URL);
  try {
    await deleteRedisKeys(store.redis!, `${store.namespace}:*`);
  } finally {
    await store.close();
  }
}

describe("two replicas on Redis (a rolling deploy)", needsServer("redis"), () => {
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  let replicas: App[] = [];
  let dir: string;

  beforeAll(async () => {
    await deleteAppKeys();
    llm = await LlmEmulator.start({
      responder: (req) =>
        isTitleRequest(req)
          ? { text: "Replica test" }
          : {
              text: `You said: ${lastUserText(req).replace(/^\[[^\]]*\]\s*/, "")}`,
              chunkSize: 4,
              delayMs: 20,
            },
    });
    discord = await DiscordEmulator.start();
    dir = scratchConfig("discord:\n  editIntervalMs: 250\n");
    const env = appEnv({ dir, llm, discord, store: REDIS_URL });
    // Both replicas hold a gateway session for the same shard, so both receive every event.
    replicas = [await startApp({ env, cwd: dir }), await startApp({ env, cwd: dir })];
  }, 90_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await discord?.stop();
    await llm?.close();
    await deleteAppKeys();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers each message once, although both replicas receive it", async () => {
    const first = discord.userMessage(discord.state.general, "hello replicas", { mentionsBot: true });
    await waitFor(() => discord.botMessages(first.id).some((m) => m.content === "You said: hello replicas"), {
      timeoutMs: 25_000,
    });
    // A follow-up in the thread: one turn, with the first exchange from the shared session.
    discord.userMessage(first.id, "and again");
    await waitFor(() => discord.botMessages(first.id).some((m) => m.content === "You said: and again"), {
      timeoutMs: 25_000,
    });
    // Both replicas idle and nothing more reaching Discord: a second answer would be there by now.
    await Promise.all(replicas.map((r) => r.dispatcher.settled()));
    await untilQuiet(discord.requests);
    await Promise.all(replicas.map((r) => r.dispatcher.settled()));
    expect(discord.botMessages(first.id).map((m) => m.content)).toEqual([
      "You said: hello replicas",
      "You said: and again",
    ]);
    const asked = llm.requests.filter((r) => !isTitleRequest(r)).map((r) => lastUserText(r));
    expect(asked.filter((t) => t.endsWith("hello replicas"))).toHaveLength(1);
    expect(asked.filter((t) => t.endsWith("and again"))).toHaveLength(1);
    const followUp = llm.requests.find((r) => lastUserText(r).endsWith("and again"));
    expect(JSON.stringify(followUp?.messages)).toContain("You said: hello replicas");
  }, 60_000);
});
