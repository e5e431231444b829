import { rmSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/index.js";
import { needsServer, SERVER_NAMES, type ServerKind, serverUrl } from "../../src/store/testing.js";
import { LlmEmulator, type RecordedRequest } from "../emulators/llm/index.js";
import { SlackEmulator } from "../emulators/slack/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { killStarted, startSwitchboard, waitUntil } from "../support/process.js";
import { deleteAppKeys, redisDatabase } from "../support/redis-databases.js";
import { type Cut, TcpProxy } from "../support/tcp-proxy.js";

const GRACE_MS = 1_000;
/** The README: a stopping process exits at most 5 s after its grace (a second more for a loaded machine). */
const EXITS_WITHIN_MS = GRACE_MS + 6_000;
const SLOW_ANSWER = `${"chunk ".repeat(300)}THE-END`;

function responder(req: RecordedRequest) {
  if (isTitleRequest(req)) return { text: "Cut off" };
  return lastUserText(req).includes("slow")
    ? { text: SLOW_ANSWER, chunkSize: 6, delayMs: 40 }
    : { text: `You said: ${lastUserText(req)}` };
}

/** The app's rows on the run's PostgreSQL (its default namespace; no other suite writes it there). */
async function deleteAppRows(url: string): Promise<void> {
  const store = await openStore(url);
  try {
    const prefix = `${store.namespace}:`;
    await store.sql?.query(`DELETE FROM ${store.sql.table} WHERE left(key, $1) = $2`, [
      prefix.length,
      prefix,
    ]);
  } finally {
    await store.close();
  }
}

const stores: Record<ServerKind, { url: () => string; clear: (url: string) => Promise<void> }> = {
  redis: { url: () => redisDatabase(serverUrl("redis"), 6), clear: deleteAppKeys },
  postgres: { url: () => serverUrl("postgres"), clear: deleteAppRows },
};

/**
 * `switchboard start` on Redis or PostgreSQL, reaching it through a proxy the test cuts as
 * the deploy's SIGTERM comes: the Redis client queues every command for a connection that
 * does not come back, and both wait for replies on a connection that is half open, so
 * nothing the stop asks of the store is ever answered.
 */
for (const kind of ["redis", "postgres"] as const)
  describe(`SIGTERM while ${SERVER_NAMES[kind]} does not answer the process`, needsServer(kind), () => {
    const url = stores[kind].url();
    let llm: LlmEmulator;
    let slack: SlackEmulator;
    let proxy: TcpProxy;
    let dir: string;
    let env: NodeJS.ProcessEnv;

    beforeAll(async () => {
      llm = await LlmEmulator.start({ responder });
      slack = await SlackEmulator.start();
      proxy = await TcpProxy.start(url);
      dir = scratchConfig(`shutdown:\n  graceMs: ${GRACE_MS}\nslack:\n  updateIntervalMs: 500\n`);
      env = appEnv({ dir, llm, slack, store: proxy.urlFor(url) });
    });

    beforeEach(async () => {
      proxy.restore();
      // The turn a cut-off process left is not the next one's to finish.
      await stores[kind].clear(url);
    });

    afterAll(async () => {
      killStarted();
      await proxy?.close();
      await slack?.stop();
      await llm?.close();
      await stores[kind].clear(url);
      rmSync(dir, { recursive: true, force: true });
    });

    const botText = (ts: string) =>
      slack
        .botReplies("C1", ts)
        .map((r) => r.text)
        .join("\n");

    /** A bot writing a slow answer in a thread of C1. */
    async function answering() {
      const bot = startSwitchboard("start", env);
      await waitUntil(() => bot.stderr().includes("Switchboard is running"), "the bot to start");
      const m = slack.mention("C1", "U_ALICE", "a slow answer please");
      await waitUntil(() => botText(m.ts).includes("chunk chunk"), "the answer to start streaming");
      return { bot, ts: m.ts };
    }

    /** Milliseconds from SIGTERM to the exit, with its code; undefined when still running after `EXITS_WITHIN_MS`. */
    async function stopTimed(bot: ReturnType<typeof startSwitchboard>) {
      const signalled = performance.now();
      bot.child.kill("SIGTERM");
      const exit = await Promise.race([bot.exited, sleep(EXITS_WITHIN_MS, "running" as const)]);
      return exit === "running" ? undefined : { code: exit, ms: performance.now() - signalled };
    }

    it.each<Cut>(["silent", "refuse"])(
      "exits within 5 s of its grace, mid-answer (%s)",
      async (cut) => {
        const { bot } = await answering();
        proxy.cutOff(cut);
        const stopped = await stopTimed(bot);
        expect(stopped, `still running ${EXITS_WITHIN_MS} ms after SIGTERM:\n${bot.stderr()}`).toBeDefined();
        console.info(`store cut off (${cut}): exited ${Math.round(stopped!.ms)} ms after SIGTERM`);
        expect(stopped!.code).toBe(0);
      },
      60_000,
    );

    it("with its store answering, ends the answer with the restart note and exits at once", async () => {
      const { bot, ts } = await answering();
      const stopped = await stopTimed(bot);
      expect(stopped).toMatchObject({ code: 0 });
      expect(botText(ts)).toMatch(/Interrupted by a restart; ask again\.$/);
      expect(bot.stderr()).not.toContain("does not answer");
    }, 60_000);
  });
