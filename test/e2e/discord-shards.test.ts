import { rmSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "discord.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { DiscordEmulator, waitFor } from "../emulators/discord/index.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { untilQuiet } from "../support/quiet.js";

/** Two replicas, each one gateway shard of two, sharing one store (a SQLite file here). */
describe("Discord replicas as shards [0, 2] and [1, 2]", () => {
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  const dirs: string[] = [];
  let replicas: App[] = [];

  beforeAll(async () => {
    llm = await LlmEmulator.start({
      responder: (req) =>
        isTitleRequest(req)
          ? { text: "Shards" }
          : { text: `You said: ${lastUserText(req).replace(/^\[[^\]]*\]\s*/, "")}` },
    });
    discord = await DiscordEmulator.start();
    for (const id of [0, 1]) {
      dirs.push(scratchConfig(`discord:\n  editIntervalMs: 250\n  shard:\n    id: ${id}\n    count: 2\n`));
    }
    const store = `sqlite://${join(dirs[0]!, "store.sqlite")}`;
    replicas = await Promise.all(
      dirs.map((dir) => startApp({ env: appEnv({ dir, llm, discord, store }), cwd: dir })),
    );
  }, 60_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await discord?.stop();
    await llm?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const clientOf = (app: App) => (app.adapters[0] as unknown as { client: Client }).client;

  it("each replica holds its own shard, and only the guild's shard knows the guild", () => {
    expect(replicas.map((r) => [...clientOf(r).ws.shards.keys()])).toEqual([[0], [1]]);
    const owner = Number((BigInt(discord.guildId) >> 22n) % 2n);
    expect(replicas.map((r) => clientOf(r).guilds.cache.has(discord.guildId))).toEqual([
      owner === 0,
      owner === 1,
    ]);
  });

  it("answers a mention in the guild and a direct message once each", async () => {
    const mention = discord.userMessage(discord.state.general, "hello shards", { mentionsBot: true });
    const dm = discord.dm(discord.state.bob.id, "hello in private");
    await waitFor(() => discord.botMessages(mention.id).some((m) => m.content === "You said: hello shards"), {
      timeoutMs: 20_000,
    });
    await waitFor(
      () => discord.botMessages(dm.channelId).some((m) => m.content === "You said: hello in private"),
      {
        timeoutMs: 20_000,
      },
    );
    await Promise.all(replicas.map((r) => r.dispatcher.settled()));
    await untilQuiet(discord.requests);
    expect(discord.botMessages(mention.id).map((m) => m.content)).toEqual(["You said: hello shards"]);
    expect(discord.botMessages(dm.channelId).map((m) => m.content)).toEqual(["You said: hello in private"]);
    // Each message reached one replica only: one model request each, no dedupe needed.
    const asked = llm.requests.filter((r) => !isTitleRequest(r)).map((r) => lastUserText(r));
    expect(asked.filter((t) => t.endsWith("hello shards"))).toHaveLength(1);
    expect(asked.filter((t) => t.endsWith("hello in private"))).toHaveLength(1);
  }, 60_000);
});
