/**
 * Discord for the benchmarks: the Discord emulator with its default limits (5 message
 * writes per 5 s per channel, 50 requests per second per bot, 5 new threads per channel
 * per 5 minutes, real time), a watcher on what it stores, and the two bots that answer on
 * it: the real Switchboard app and the naive bot (discord.js gateway + raw REST calls).
 */
import { encodeThread } from "../../src/core/thread.js";
import { DiscordEmulator } from "../../test/emulators/discord/index.js";
import type { RestRecord } from "../../test/emulators/discord/types.js";
import { startWithEverything } from "../../test/support/app-env.js";
import type { Arena, Asked } from "./arena.js";
import type { BenchModel } from "./llm.js";
import { startNaiveDiscordBot } from "./load-naive-bots.js";
import { turnOver } from "./settled.js";
import { Watcher } from "./watch.js";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class DiscordWatcher extends Watcher {
  constructor(private readonly emu: DiscordEmulator) {
    super();
    const dispatch = emu.dispatch.bind(emu);
    emu.dispatch = (t, d, intent) => {
      dispatch(t, d, intent);
      if (t === "MESSAGE_CREATE" || t === "MESSAGE_UPDATE") this.message(t, d as Record<string, unknown>);
    };
    const requests = emu.requests;
    const push = requests.push.bind(requests);
    requests.push = (...items: RestRecord[]) => {
      for (const r of items) this.request(r);
      return push(...items);
    };
  }

  private message(t: string, d: Record<string, unknown>): void {
    if ((d.author as { id?: string } | undefined)?.id !== this.emu.bot.id) return;
    const thread = String(d.channel_id);
    const kind = t === "MESSAGE_CREATE" ? "create" : "edit";
    this.record({ thread, message: `${thread}:${String(d.id)}`, at: Date.now(), kind, method: t });
  }

  /** Writes that are not message sends or edits: deletes, threads opened, renames, typing. */
  private request(r: RestRecord): void {
    if (r.method === "GET" || r.status >= 300) return;
    const at = Date.now();
    const del = /^\/api\/v10\/channels\/(\d+)\/messages\/(\d+)$/.exec(r.path);
    if (del && r.method === "DELETE") {
      this.record({
        thread: del[1] as string,
        message: `${del[1]}:${del[2]}`,
        at,
        kind: "delete",
        method: "DELETE",
      });
      return;
    }
    const opened = /^\/api\/v10\/channels\/\d+\/messages\/(\d+)\/threads$/.exec(r.path);
    const other = /^\/api\/v10\/channels\/(\d+)(\/typing)?$/.exec(r.path);
    const thread = opened?.[1] ?? other?.[1];
    if (thread)
      this.record({ thread, at, kind: "other", method: `${r.method} ${r.path.replace(/\d{6,}/g, "{id}")}` });
  }

  protected textOf(message: string): string | undefined {
    const [channel, id] = message.split(":");
    return this.emu.messages(channel ?? "").find((m) => m.id === id)?.content;
  }

  limited(): Array<{ kind: string; at: number }> {
    return this.emu.limiter.hits.map((h) => ({ kind: h.kind, at: h.at }));
  }
}

export abstract class DiscordArena implements Arena {
  abstract readonly bot: Arena["bot"];
  readonly watch: DiscordWatcher;
  private channels = 0;

  constructor(readonly emu: DiscordEmulator) {
    this.watch = new DiscordWatcher(emu);
  }

  /** A new text channel, announced on the gateway and given a moment to reach the bot's cache. */
  async place(): Promise<string> {
    this.channels += 1;
    const id = this.emu.state.addChannel({ type: 0, name: `bench-${this.channels}` }).id;
    this.emu.dispatch("CHANNEL_CREATE", { ...this.emu.channel(id) }, 1);
    await sleep(150);
    return id;
  }

  mention(place: string, text: string): Asked {
    const at = Date.now();
    const m = this.emu.userMessage(place, text, { mentionsBot: true });
    // A thread opened from a message has the message's id, as on Discord.
    return { thread: m.id, at };
  }

  followUp(thread: string, text: string): Asked {
    const at = Date.now();
    this.emu.userMessage(thread, text);
    return { thread, at };
  }

  abstract stop(): Promise<void>;
}

const CONFIG = `
memory:
  # Compress as soon as a thread has something to fold (from its second turn), so that
  # follow-ups meet a compression still running, as they do in long threads.
  compressAt: 300
  keepMessages: 2
`;

/** The real app, with its defaults (1.5 s edit cadence, a thread per mention). */
export async function switchboardOnDiscord(model: BenchModel): Promise<Arena> {
  const emu = await DiscordEmulator.start();
  const running = await startWithEverything(CONFIG, { llm: model.llm, discord: emu });
  return new (class extends DiscordArena {
    readonly bot = "Switchboard" as const;
    settled(thread: string) {
      return turnOver(
        running.app,
        encodeThread({ platform: "discord", guild: emu.guildId, channel: thread }),
      );
    }
    async stop() {
      await running.stop();
      await emu.stop();
    }
  })(emu);
}

export async function naiveOnDiscord(model: BenchModel): Promise<Arena> {
  const emu = await DiscordEmulator.start();
  const bot = await startNaiveDiscordBot(emu, model.llm.openaiBaseUrl);
  return new (class extends DiscordArena {
    readonly bot = "naive" as const;
    async stop() {
      await bot.stop();
      await emu.stop();
    }
  })(emu);
}
