import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client, ThreadChannel } from "discord.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { configSchema } from "../config.js";
import type { AdapterDeps, TurnRunner } from "../runtime/contract.js";
import { WriteScheduler } from "../runtime/scheduler/write-scheduler.js";
import { openStore, type Store } from "../store/index.js";
import { createState } from "../store/state.js";
import { DiscordContext } from "./discord/context.js";
import { discordWritePolicy } from "./discord/write-policy.js";
import { SlackEvents } from "./slack/events.js";
import { Eyes } from "./slack/eyes.js";
import { slackWritePolicy } from "./slack/write-policy.js";

/** Two processes (or one before and after a restart) on one SQLite file remember the same things. */
describe("what adapters remember across restarts", () => {
  const stores: Store[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
  });
  const dir = mkdtempSync(join(tmpdir(), "sb-remembered-"));
  const file = `sqlite://${join(dir, "store.sqlite")}`;
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const state = async () => {
    const store = await openStore(file);
    stores.push(store);
    return createState(store);
  };

  it("renames a Discord thread once, also when another process asks again", async () => {
    const renames: string[] = [];
    const thread = {
      id: "T-1",
      ownerId: "BOT",
      setName: async (name: string) => void renames.push(name),
    } as unknown as ThreadChannel;
    const client = { user: { id: "BOT" } } as unknown as Client;
    // Two processes on one store, opened one after the other: two connections creating the
    // same new SQLite file at the same instant can meet SQLITE_BUSY before the busy timeout applies.
    const contexts: DiscordContext[] = [];
    for (let i = 0; i < 2; i++) {
      contexts.push(
        new DiscordContext(
          client,
          { state: await state(), config: configSchema.parse({}) } as AdapterDeps,
          new WriteScheduler(discordWritePolicy),
        ),
      );
    }
    await Promise.all(contexts.map((c, i) => c.renamer(thread)?.(`Title ${i}`)));
    await contexts[0]?.renamer(thread)?.("Later title");
    expect(renames).toHaveLength(1);
  });

  it("knows a user's last Slack thread after a restart, for slash commands without a thread", async () => {
    const runner = { knows: async () => true } as unknown as TurnRunner;
    /** The real event handling, without the Slack calls of the answer itself. */
    class Events extends SlackEvents {
      override async turn(): Promise<void> {}
    }
    const events = async () =>
      new Events({
        runner,
        config: configSchema.parse({}),
        token: "xoxb-test",
        identity: () => ({ teamId: "T1", botUserId: "UBOT", botId: "BBOT" }),
        writes: {} as never,
        reads: {} as never,
        scheduler: new WriteScheduler(slackWritePolicy),
        eyes: new Eyes({ writes: {} as never, scheduler: new WriteScheduler(slackWritePolicy) }),
        state: await state(),
      });
    const before = await events();
    await before.onMessage(
      {
        type: "message",
        channel: "C1",
        user: "U1",
        text: "and then?",
        ts: "1712345679.000200",
        thread_ts: "1712345678.000100",
      },
      "Ev1",
    );
    const after = await events();
    expect(await after.latestThread("C1", "U1")).toBe("slack:T1:C1:1712345678.000100");
    expect(await after.latestThread("C1", "U2")).toBeUndefined();
  });
});
