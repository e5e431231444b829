/**
 * Slack for the benchmarks: the Slack emulator with its default limits (Slack's published
 * tiers, real time), a watcher on its Web API, and the two bots that answer on it: the
 * real Switchboard app (startApp, Socket Mode, SQLite, the "everything" MCP server) and
 * the naive bot (Socket Mode client + WebClient).
 */
import { encodeThread } from "../../src/core/thread.js";
import type { Params } from "../../test/emulators/slack/http-util.js";
import { SlackEmulator, TEAM_ID } from "../../test/emulators/slack/index.js";
import { startWithEverything } from "../../test/support/app-env.js";
import type { Arena, Asked } from "./arena.js";
import type { BenchModel } from "./llm.js";
import { startNaiveSlackBot } from "./load-naive-bots.js";
import { turnOver } from "./settled.js";
import { Watcher } from "./watch.js";

const MESSAGE_CREATES = new Set(["chat.postMessage", "chat.startStream"]);
const MESSAGE_EDITS = new Set(["chat.update", "chat.appendStream", "chat.stopStream"]);
const OTHER_WRITES = new Set([
  "reactions.add",
  "reactions.remove",
  "assistant.threads.setStatus",
  "assistant.threads.setTitle",
  "chat.postEphemeral",
]);

const str = (p: Params, k: string): string | undefined =>
  typeof p[k] === "string" ? (p[k] as string) : undefined;

export class SlackWatcher extends Watcher {
  constructor(private readonly emu: SlackEmulator) {
    super();
    const api = emu.api;
    const handle = api.handle.bind(api);
    api.handle = (method, params, token) => {
      const result = handle(method, params, token);
      if (result.status === 200 && result.body.ok === true) this.seen(method, params, result.body);
      return result;
    };
  }

  private threadOf(channel: string, ts: string): string | undefined {
    const m = this.emu.state.messages.find((x) => x.channel === channel && x.ts === ts);
    return m ? `${channel}:${m.thread_ts ?? m.ts}` : undefined;
  }

  private seen(method: string, params: Params, body: Params): void {
    const at = Date.now();
    if (MESSAGE_CREATES.has(method)) {
      const channel = str(body, "channel") ?? "";
      const ts = str(body, "ts") ?? "";
      const thread = this.threadOf(channel, ts);
      if (thread) this.record({ thread, message: `${channel}:${ts}`, at, kind: "create", method });
    } else if (MESSAGE_EDITS.has(method) || method === "chat.delete") {
      const channel = str(params, "channel") ?? "";
      const ts = str(params, "ts") ?? "";
      const thread = this.threadOf(channel, ts);
      const kind = method === "chat.delete" ? "delete" : "edit";
      if (thread) this.record({ thread, message: `${channel}:${ts}`, at, kind, method });
    } else if (OTHER_WRITES.has(method)) {
      const channel = str(params, "channel") ?? str(params, "channel_id") ?? "";
      const ts = str(params, "thread_ts") ?? str(params, "timestamp") ?? "";
      const thread = this.threadOf(channel, ts);
      if (thread) this.record({ thread, at, kind: "other", method });
    }
  }

  protected textOf(message: string): string | undefined {
    const [channel, ts] = message.split(":");
    return this.emu.state.find(channel ?? "", ts ?? "")?.text;
  }

  limited(): Array<{ kind: string; at: number }> {
    return this.emu.rates.limited.map((l) => ({ kind: l.method, at: l.at }));
  }
}

const USERS = ["U_ALICE", "U_BOB", "U_CAROL", "U_DAVE", "U_ERIN"];

export abstract class SlackArena implements Arena {
  abstract readonly bot: Arena["bot"];
  readonly watch: SlackWatcher;
  private channels = 0;
  private asks = 0;

  constructor(readonly emu: SlackEmulator) {
    this.watch = new SlackWatcher(emu);
  }

  async place(): Promise<string> {
    this.channels += 1;
    const id = `CB${this.channels}`;
    this.emu.state.addChannel(id, `bench-${this.channels}`);
    return id;
  }

  mention(place: string, text: string): Asked {
    const user = USERS[this.asks++ % USERS.length] as string;
    const at = Date.now();
    const m = this.emu.mention(place, user, text);
    return { thread: `${place}:${m.ts}`, at };
  }

  followUp(thread: string, text: string): Asked {
    const [channel, ts] = thread.split(":") as [string, string];
    const root = this.emu.state.find(channel, ts);
    const at = Date.now();
    this.emu.post(channel, root?.user ?? "U_ALICE", text, { threadTs: ts });
    return { thread, at };
  }

  /** Slack's windows are a minute long: without this, a crowd would inherit the minute before it. */
  quiet(): void {
    this.emu.rates.reset();
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

/** The real app, with its defaults (native streaming, 1.2 s update cadence). */
export async function switchboardOnSlack(model: BenchModel): Promise<Arena> {
  const emu = await SlackEmulator.start();
  const running = await startWithEverything(CONFIG, { llm: model.llm, slack: emu });
  return new (class extends SlackArena {
    readonly bot = "Switchboard" as const;
    settled(thread: string) {
      const [channel, ts] = thread.split(":") as [string, string];
      return turnOver(running.app, encodeThread({ platform: "slack", team: TEAM_ID, channel, thread: ts }));
    }
    async stop() {
      await running.stop();
      await emu.stop();
    }
  })(emu);
}

export async function naiveOnSlack(model: BenchModel): Promise<Arena> {
  const emu = await SlackEmulator.start();
  const bot = await startNaiveSlackBot(emu, model.llm.openaiBaseUrl);
  return new (class extends SlackArena {
    readonly bot = "naive" as const;
    async stop() {
      await bot.stop();
      await emu.stop();
    }
  })(emu);
}
