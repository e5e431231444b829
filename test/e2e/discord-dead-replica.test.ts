import { rmSync } from "node:fs";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { DEDUPE_TTL_MS } from "../../src/store/dedupe.js";
import { openStore } from "../../src/store/index.js";
import { createState } from "../../src/store/state.js";
import { DiscordEmulator, type StoredMessage, waitFor } from "../emulators/discord/index.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText } from "../support/llm-text.js";
import { untilQuiet } from "../support/quiet.js";

/*
 * Every replica of one Discord gateway session receives each message, and Discord sends
 * none again. The replica that claims a message may die before it stores it: this app is
 * the replica that lived. The dead one is a claim in the shared store under a process
 * name that never beats, written while the emulator holds the message back from the
 * gateway (it then reaches the app as a resumed session's replay).
 */

const DEAD = "a-replica-killed-before-it-stored-the-message";

const said = (text: string) => text.replace(/^\[[^\]]*\]\s*/, "");

describe("a Discord message whose replica died before storing it", () => {
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  let app: App;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  /** The gateway's replays before the last `deliveredAfter`. */
  let replayed = 0;

  beforeAll(async () => {
    llm = await LlmEmulator.start({
      responder: (req) =>
        isTitleRequest(req) ? { text: "Dead replica" } : { text: `You said: ${said(lastUserText(req))}` },
    });
    discord = await DiscordEmulator.start();
    dir = scratchConfig("discord:\n  editIntervalMs: 250\n");
    env = appEnv({ dir, llm, discord });
    app = await startApp({ env, cwd: dir });
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await discord?.stop();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    await app.dispatcher.settled();
    await untilQuiet(discord.requests);
  });

  /** `send` while the gateway holds events back, then `claims` in the store as `owner`'s, then the events. */
  async function deliveredAfter(
    send: () => StoredMessage,
    claims: (m: StoredMessage) => string[],
    owner = DEAD,
  ): Promise<StoredMessage> {
    discord.gateway.hold(true);
    replayed = discord.gateway.stats.replayed;
    const message = send();
    const store = await openStore(env.STORE_URL!);
    try {
      const state = createState(store);
      for (const id of claims(message)) await state.set(`dedupe:${id}`, owner, DEDUPE_TTL_MS);
    } finally {
      await store.close();
    }
    discord.release();
    return message;
  }

  const asked = (text: string) =>
    llm.requests.filter((r) => !isTitleRequest(r) && said(lastUserText(r)) === text).length;

  /** `text` answered once in `thread`, after the `earlier` answers there, the model asked once; nothing in the channel. */
  async function answeredOnce(thread: string, text: string, earlier: string[] = []): Promise<void> {
    const answer = `You said: ${text}`;
    await waitFor(() => discord.botMessages(thread).some((b) => b.content === answer), { timeoutMs: 20_000 });
    await app.dispatcher.settled();
    await untilQuiet(discord.requests);
    expect(discord.botMessages(thread).map((b) => b.content)).toEqual([...earlier, answer]);
    expect(discord.botMessages(discord.state.general)).toEqual([]);
    expect(asked(text)).toBe(1);
  }

  it("answers a mention whose thread the dead replica claimed, once, in a thread opened under it", async () => {
    const m = await deliveredAfter(
      () => discord.userMessage(discord.state.general, "first question", { mentionsBot: true }),
      (m) => [`discord:thread-for:${m.id}`],
    );
    await answeredOnce(m.id, "first question");
  }, 30_000);

  it("answers in the thread the dead replica had opened, and opens no other", async () => {
    const m = await deliveredAfter(
      () => {
        const message = discord.userMessage(discord.state.general, "second question", { mentionsBot: true });
        // The dead replica got as far as opening the thread, which has the message's id.
        discord.state.addThread(discord.state.general, "second question", discord.state.bot.id, message.id);
        return message;
      },
      (m) => [`discord:thread-for:${m.id}`, `discord:m:${m.id}`],
    );
    await answeredOnce(m.id, "second question");
  }, 30_000);

  it("answers a message in a thread whose id the dead replica claimed", async () => {
    const opening = discord.userMessage(discord.state.general, "third question", { mentionsBot: true });
    await waitFor(() => discord.botMessages(opening.id).length === 1, { timeoutMs: 20_000 });
    await app.dispatcher.settled();
    await deliveredAfter(
      () => discord.userMessage(opening.id, "and a follow-up", { mentionsBot: true }),
      (m) => [`discord:m:${m.id}`],
    );
    await answeredOnce(opening.id, "and a follow-up", ["You said: third question"]);
  }, 40_000);

  it("leaves a message the other replica stored before it died: that one's record is answered from the store", async () => {
    const m = await deliveredAfter(
      () => discord.userMessage(discord.state.general, "fourth question", { mentionsBot: true }),
      (m) => [`discord:thread-for:${m.id}`, `discord:m:${m.id}`],
      `held:${DEAD}`,
    );
    // The message has reached the app again (the resumed session's replay); then a quiet while.
    await waitFor(() => discord.gateway.stats.replayed > replayed, { timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 1_500));
    await app.dispatcher.settled();
    expect(discord.state.channels.has(m.id)).toBe(false);
    expect(asked("fourth question")).toBe(0);
  }, 30_000);
});
