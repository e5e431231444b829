/**
 * The load benchmark's measurements, the same for both bots: a crowd of threads at once on
 * a fresh emulator (CPU, memory and event-loop delay of the bot's process around it), and
 * conversations one at a time. Clocks run in the benchmark's process, from the person's
 * message sent to the write the emulator answered (see watch.ts).
 */
import { DiscordEmulator } from "../../test/emulators/discord/index.js";
import { SLACK_PER_CHANNEL_LIMITS, SlackEmulator } from "../../test/emulators/slack/index.js";
import { lastUserText } from "../../test/support/llm-text.js";
import type { Arena, Asked } from "./arena.js";
import { DiscordArena } from "./discord.js";
import { kindOf } from "./llm.js";
import { type BotName, type LoadBot, type PlatformLink, startNaive, startSwitchboard } from "./load-bots.js";
import type { AppBuild } from "./load-build.js";
import { answerFor, LONG_ANSWER, type LoadModel, SHORT_ASK } from "./load-model.js";
import { cpuSeconds, peakRssMiB, rssMiB } from "./load-process.js";
import { crowd, type Turn, timed, withWrites } from "./scenarios.js";
import { SlackArena } from "./slack.js";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Threads Discord lets one channel open per 5 minutes in the emulator. Discord publishes
 * no number (test/emulators/discord/ratelimit.ts); the default of 5 would measure that
 * guess, not the writes, so the crowd in one channel is allowed all its threads.
 */
export const DISCORD_THREADS_PER_WINDOW = 10_000;

/** One workload's platform: how to start a fresh emulator and the arena that watches it. */
export interface Stage {
  /** "Slack, per-channel limits", ... */
  name: string;
  platform: "slack" | "discord";
  /** Threads of a crowd opened in one channel. */
  perChannel(n: number): number;
  open(bot: BotName): Promise<{ arena: Arena; link: PlatformLink; stop(): Promise<void> }>;
}

class SlackStage extends SlackArena {
  constructor(
    emu: SlackEmulator,
    readonly bot: BotName,
  ) {
    super(emu);
  }
  async stop() {
    await this.emu.stop();
  }
}

class DiscordStage extends DiscordArena {
  constructor(
    emu: DiscordEmulator,
    readonly bot: BotName,
  ) {
    super(emu);
  }
  async stop() {
    await this.emu.stop();
  }
}

function slackStage(name: string, perChannelLimits: boolean): Stage {
  return {
    name,
    platform: "slack",
    // Every person in a channel of their own (or a DM, which is a channel on Slack).
    perChannel: () => 1,
    async open(bot) {
      const emu = await SlackEmulator.start(perChannelLimits ? { rateLimits: SLACK_PER_CHANNEL_LIMITS } : {});
      const arena = new SlackStage(emu, bot);
      return { arena, link: { slack: emu }, stop: () => arena.stop() };
    },
  };
}

export const SLACK_PER_CHANNEL = slackStage("Slack, per-channel limits", true);
export const SLACK_WORKSPACE = slackStage("Slack, workspace tiers", false);
export const DISCORD: Stage = {
  name: "Discord, one channel",
  platform: "discord",
  perChannel: (n) => n,
  async open(bot) {
    const emu = await DiscordEmulator.start({ rateLimits: { threads: DISCORD_THREADS_PER_WINDOW } });
    const arena = new DiscordStage(emu, bot);
    return { arena, link: { discord: emu }, stop: () => arena.stop() };
  },
};

/** A fresh emulator and a fresh bot process on it for `fn`; both stopped whatever happens. */
export async function onStage<T>(
  stage: Stage,
  bot: BotName,
  deps: { build: AppBuild; model: LoadModel },
  fn: (arena: Arena, bot: LoadBot) => Promise<T>,
): Promise<T> {
  const { arena, link, stop } = await stage.open(bot);
  try {
    const running =
      bot === "Switchboard"
        ? await startSwitchboard(deps.build, deps.model, link)
        : await startNaive(deps.model, link);
    try {
      return await fn(arena, running);
    } finally {
      await running.stop();
    }
  } finally {
    await stop();
  }
}

/** On Discord, when the bot's thread appeared under the person's message (ms after it); NaN when none did. */
function threadOpened(arena: Arena, asked: Asked): number {
  const e = arena.watch.events.find(
    (x) =>
      x.thread === asked.thread && x.kind === "other" && x.method.endsWith("/threads") && x.at >= asked.at,
  );
  return e ? e.at - asked.at : Number.NaN;
}

/** The earlier of two times, either of which may be missing (NaN). */
const earlier = (a: number, b: number) => (Number.isNaN(a) ? b : Number.isNaN(b) ? a : Math.min(a, b));

const bare = (s: string) => s.replace(/\s+/g, "");

export interface Measured {
  turn: Turn;
  /** ms to the first thing the person sees: the first message, or on Discord the thread if it came first. */
  visible: number;
  /** Discord: ms to the bot's thread under the message. */
  thread: number;
  /** ms to the text complete; Infinity when it never was. */
  final: number;
  /** Edits of the answer's messages that showed part of it (before the write that completed it). */
  partialEdits: number;
  /** The thread holds more or other text than the answer (an error note, a repeat) at the end. */
  wrongText: boolean;
  /** Crowds: ms from the message to the model's request for its answer (NaN when none came). */
  modelAsked?: number;
}

function measure(arena: Arena, asked: Asked, turn: Turn, expected: string): Measured {
  const thread = threadOpened(arena, asked);
  const completedAt = asked.at + turn.final;
  const mine = new Set(arena.watch.messagesOf(asked.thread, asked.at));
  const partialEdits = arena.watch.events.filter(
    (e) => e.kind === "edit" && e.message !== undefined && mine.has(e.message) && e.at < completedAt,
  ).length;
  return {
    turn,
    visible: earlier(turn.first, thread),
    thread,
    final: turn.complete ? turn.final : Number.POSITIVE_INFINITY,
    partialEdits,
    wrongText: turn.complete && bare(arena.watch.textSince(asked.thread, asked.at)) !== bare(expected),
  };
}

/** One answer, alone: asked, clocked, then a quiet second so its after-turn writes do not overlap the next. */
async function one(arena: Arena, question: string): Promise<Measured> {
  const place = await arena.place();
  const asked = arena.mention(place, question);
  const expected = answerFor(question);
  const t = await timed(arena, asked, expected, 60_000);
  await sleep(1_000);
  return measure(arena, asked, withWrites(arena, asked, Number.POSITIVE_INFINITY, t), expected);
}

/** A first answer in a fresh process pays for compiling its code paths: measured nowhere. */
async function warmUp(arena: Arena): Promise<void> {
  await one(arena, "warm-up: why did build 731 fail?");
  arena.quiet?.();
}

export interface Singles {
  long: Measured[];
  short: Measured[];
}

/** `runs` answers of 200 words, then `runs` of ten words, one at a time, each in a new channel. */
export async function singles(arena: Arena, runs: number): Promise<Singles> {
  await warmUp(arena);
  const out: Singles = { long: [], short: [] };
  for (let i = 0; i < runs; i++) out.long.push(await one(arena, `single ${i}: why did build 731 fail?`));
  for (let i = 0; i < runs; i++)
    out.short.push(await one(arena, `single ${i}, ${SHORT_ASK}: which build failed?`));
  return out;
}

export interface CrowdRun {
  n: number;
  measured: Measured[];
  limited: { total: number; byKind: string };
  /** ms from the first mention to the last answer complete (or the timeout). */
  allDoneMs: number;
  /** The model's stream time, probed beside the crowd on the same emulator. */
  modelMs: number;
  cpuSeconds: number;
  peakRssMiB: number;
  rssBeforeMiB: number;
  lagP99Ms: number;
  failedTurns: number | undefined;
}

/**
 * For each crowd message (`crowd <i>: …`), ms from it to the first request for its answer
 * the model received: the bot's own intake, apart from the writes after it.
 */
function modelAskedAfter(model: LoadModel, asks: Asked[]): number[] {
  const from = asks[0]?.at ?? 0;
  const out: number[] = asks.map(() => Number.NaN);
  for (const req of model.llm.requests) {
    if (req.receivedAt === undefined || req.receivedAt < from || kindOf(req) !== "chat") continue;
    const i = Number(/\bcrowd (\d+):/.exec(lastUserText(req))?.[1]);
    const ask = asks[i];
    if (!ask || !Number.isNaN(out[i] as number)) continue;
    out[i] = req.receivedAt - ask.at;
  }
  return out;
}

/** `n` people at once (`perChannel` to a channel), after a warm-up answer; the bot's costs measured around it. */
export async function crowdRun(
  arena: Arena,
  bot: LoadBot,
  model: LoadModel,
  n: number,
  perChannel: number,
  timeoutMs: number,
): Promise<CrowdRun> {
  await warmUp(arena);
  const pid = bot.proc.pid;
  const rssBeforeMiB = rssMiB(pid);
  await bot.resetLag();
  const cpu0 = cpuSeconds(pid);
  const probe = model.probe("probe: why did build 731 fail?");
  const c = await crowd(arena, n, timeoutMs, perChannel);
  const cpu1 = cpuSeconds(pid);
  const lagP99Ms = await bot.lagP99Ms();
  const asked = modelAskedAfter(model, c.asked);
  return {
    n,
    measured: c.turns.map((t, i) => ({
      ...measure(arena, c.asked[i] as Asked, t, LONG_ANSWER),
      modelAsked: asked[i] ?? Number.NaN,
    })),
    limited: c.limited,
    allDoneMs: c.allDoneMs,
    modelMs: await probe,
    cpuSeconds: cpu1 - cpu0,
    peakRssMiB: peakRssMiB(pid),
    rssBeforeMiB,
    lagP99Ms,
    failedTurns: await bot.failedTurns(),
  };
}
