import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "../../../test/emulators/slack/index.js";
import { loadConfig } from "../../config.js";
import { createSlackConnection } from "./app.js";

/**
 * Reads are paced per method: a 429 on one waits out its Retry-After for that method alone.
 * Bolt's own client pauses every call of the process on any 429 (web-api pauses its whole
 * queue), which held up every thread read and name lookup behind one busy method.
 */
describe("the Slack reads client", () => {
  let emu: SlackEmulator | undefined;
  afterEach(async () => {
    await emu?.stop();
  });

  it("keeps reading threads while one method waits out a 429, and then reads that one too, even inside a write", async () => {
    emu = await SlackEmulator.start({ rateLimits: { perMinute: { "users.info": 1 }, speed: 20 } });
    const { config, secrets } = loadConfig(
      {
        SLACK_BOT_TOKEN: emu.botToken,
        SLACK_APP_TOKEN: emu.appToken,
        SLACK_API_URL: emu.apiUrl,
        OPENAI_API_KEY: "x",
      },
      "/nonexistent",
    );
    const conn = createSlackConnection(config, secrets);
    const root = emu.post("C1", "U_ALICE", "hello");
    await conn.reads.users.info({ user: "U_ALICE" });
    // Slack's minute is 3 s here: the second lookup meets a 429 and waits for the next one,
    // though it is made inside a write (as a reply taken over looks up what it posted).
    const second = conn.writes.scheduler
      .run({ lane: "final", buckets: ["test:write"], run: () => conn.reads.users.info({ user: "U_ALICE" }) })
      .then(() => Date.now());
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    const thread = await conn.reads.conversations.replies({ channel: "C1", ts: root.ts });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(thread.messages?.[0]?.text).toBe("hello");
    expect(await second).toBeGreaterThan(started);
    expect(emu.rates.limited.filter((h) => h.method === "users.info").length).toBeGreaterThan(0);
  });
});
