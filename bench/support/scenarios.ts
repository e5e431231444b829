/**
 * The measurements every platform benchmark makes, the same for Switchboard and the naive
 * bot: conversations one at a time (a first mention, then follow-ups sent the moment the
 * previous answer is complete), answers with a tool call, and a crowd of threads at once.
 * Every clock starts when the person's message is sent to the emulator and stops at the
 * write the emulator answered: the bot's first message, or the write that completed the
 * answer's text.
 */
import { appendFileSync } from "node:fs";
import type { Arena, Asked } from "./arena.js";
import { ANSWER, type BenchModel, TOOL_ANSWER } from "./llm.js";

export interface Turn {
  /** ms from the message to the bot's first message in the thread; NaN when none came. */
  first: number;
  /** ms from the message to the answer's text complete on the platform; NaN when it never was. */
  final: number;
  /** When the first message appeared (ms since epoch). */
  firstAt: number;
  complete: boolean;
  /** Message writes (posts, edits, stream calls, deletes) of this answer's messages. */
  writes: number;
  /** Other writes in the thread meanwhile (reactions, status, typing, threads, renames). */
  other: number;
  /** ms from the answer's text complete to the bot done with the thread (NaN when not measured). */
  tail: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** When the bot is done with the thread (see `Arena.settled`); now for bots that do not say. */
async function settled(arena: Arena, thread: string): Promise<number> {
  return arena.settled ? arena.settled(thread) : Date.now();
}

/** Clocks one answer: its first message and the write that completed its text. */
export async function timed(arena: Arena, asked: Asked, expected: string, timeoutMs: number) {
  const [first, final] = await Promise.allSettled([
    arena.watch.firstMessage(asked.thread, asked.at, timeoutMs),
    arena.watch.complete(asked.thread, asked.at, expected, timeoutMs),
  ]);
  const firstAt = first.status === "fulfilled" ? first.value : Number.NaN;
  const finalAt = final.status === "fulfilled" ? final.value : Number.NaN;
  return { firstAt, first: firstAt - asked.at, final: finalAt - asked.at, complete: !Number.isNaN(finalAt) };
}

/** A clocked answer with the writes of its messages (and the other writes in its thread until `until`). */
export function withWrites(
  arena: Arena,
  asked: Asked,
  until: number,
  t: Awaited<ReturnType<typeof timed>>,
  doneAt = Number.NaN,
): Turn {
  const w = arena.watch.writes(asked.thread, asked.at, until);
  return { ...t, writes: w.message, other: w.other, tail: doneAt - (asked.at + t.final) };
}

/** What the model was doing for the thread's previous turn when a follow-up's first message appeared. */
export type Meanwhile = "title" | "compression" | "title and compression" | "nothing";

export interface Conversations {
  firstMention: Turn[];
  /** Follow-ups, each sent the moment the bot was done with the turn before it. */
  followUps: Array<Turn & { meanwhile: Meanwhile }>;
}

/** Follow-ups per conversation: enough that one meets the title and a later one a compression. */
export const FOLLOW_UPS = 3;

const FOLLOW_UP_TEXTS = [
  "and what should we do before Thursday?",
  "who watches the dashboard while it runs?",
  "how long would the batched migration take?",
];

/**
 * `runs` conversations one after the other, each in a new thread of a new channel: a first
 * mention, and with `followUps` three follow-ups, each sent the moment the bot is done with
 * the turn before it (its answer complete, its turn over). The after-turn work of that turn
 * (a title after the first, compressions later; 2 s each) is then running or not: each
 * follow-up is classed by what the model was doing when its first message appeared.
 */
export async function conversations(
  arena: Arena,
  model: BenchModel,
  runs: number,
  followUps: boolean,
): Promise<Conversations> {
  const out: Conversations = { firstMention: [], followUps: [] };
  const meanwhile = (at: number): Meanwhile => {
    const title = model.running("title", at);
    const summary = model.running("summary", at);
    return title && summary ? "title and compression" : title ? "title" : summary ? "compression" : "nothing";
  };
  for (let i = 0; i < runs; i++) {
    const place = await arena.place();
    const asks: Asked[] = [arena.mention(place, `question ${i}: why did the deploy of build 731 fail?`)];
    const turns: Array<{ t: Awaited<ReturnType<typeof timed>>; done: number }> = [];
    for (let k = 0; k <= (followUps ? FOLLOW_UPS : 0); k++) {
      const asked = asks[k] as Asked;
      const t = await timed(arena, asked, ANSWER, 60_000);
      const done = t.complete ? await settled(arena, asked.thread) : Number.NaN;
      turns.push({ t, done });
      if (!t.complete || k === (followUps ? FOLLOW_UPS : 0)) break;
      asks.push(arena.followUp(asked.thread, `follow-up ${i}.${k + 1}: ${FOLLOW_UP_TEXTS[k]}`));
    }
    await sleep(500);
    turns.forEach(({ t, done }, k) => {
      const asked = asks[k] as Asked;
      const turn = withWrites(arena, asked, asks[k + 1]?.at ?? Number.POSITIVE_INFINITY, t, done);
      if (k === 0) out.firstMention.push(turn);
      else out.followUps.push({ ...turn, meanwhile: meanwhile(t.firstAt) });
    });
  }
  return out;
}

/** `runs` first mentions whose answer needs one call of the "everything" server's echo tool. */
export async function toolAnswers(arena: Arena, runs: number): Promise<Turn[]> {
  const out: Turn[] = [];
  for (let i = 0; i < runs; i++) {
    const place = await arena.place();
    const a = arena.mention(place, `tool ${i}: please echo the build number back to me`);
    const t = await timed(arena, a, TOOL_ANSWER, 60_000);
    await sleep(500);
    out.push(withWrites(arena, a, Number.POSITIVE_INFINITY, t));
  }
  return out;
}

/**
 * A person adds a second message to the thread while the bot's first answer there is
 * still streaming (`afterMs` after the mention). The design says such a message is queued,
 * never dropped: it must get its own answer once the first one is done.
 */
export async function busyThread(
  arena: Arena,
  runs: number,
  afterMs = 2_000,
): Promise<Array<{ first: Turn; second: Turn }>> {
  const out: Array<{ first: Turn; second: Turn }> = [];
  for (let i = 0; i < runs; i++) {
    const place = await arena.place();
    const a = arena.mention(place, `busy ${i}: why did the deploy of build 731 fail?`);
    const firstAnswer = timed(arena, a, ANSWER, 60_000);
    await sleep(afterMs);
    const b = arena.followUp(a.thread, `busy ${i}, one more detail: it is the billing service`);
    const ta = await firstAnswer;
    // Time enough for a queued turn to answer in full after the first one.
    const tb = await timed(arena, b, ANSWER, 20_000);
    await sleep(500);
    out.push({
      first: withWrites(arena, a, b.at, ta),
      second: withWrites(arena, b, Number.POSITIVE_INFINITY, tb),
    });
  }
  return out;
}

export interface Crowd {
  threads: number;
  turns: Turn[];
  /** ms from the first mention sent to the last answer complete (or the timeout). */
  allDoneMs: number;
  limited: { total: number; byKind: string };
  /** The people's messages, in the order of `turns`. */
  asked: Asked[];
}

/** Threads opened per channel in a crowd (Discord opens at most 5 threads per channel per 5 minutes). */
export const THREADS_PER_CHANNEL = 5;

/**
 * `n` people mention the bot at once, `perChannel` to a channel (5 unless told); every
 * answer is waited for up to `timeoutMs`.
 */
export async function crowd(
  arena: Arena,
  n: number,
  timeoutMs: number,
  perChannel = THREADS_PER_CHANNEL,
): Promise<Crowd> {
  const places: string[] = [];
  for (let i = 0; i < Math.ceil(n / perChannel); i++) places.push(await arena.place());
  const mark = arena.watch.limited().length;
  const asks = Array.from({ length: n }, (_, i) =>
    arena.mention(places[Math.floor(i / perChannel)] as string, `crowd ${i}: why did build 731 fail?`),
  );
  const start = asks[0]?.at ?? Date.now();
  const results = await Promise.all(asks.map((a) => timed(arena, a, ANSWER, timeoutMs)));
  const doneAt = Math.max(
    ...results.map((r, i) => (r.complete ? (asks[i] as Asked).at + r.final : Date.now())),
  );
  await sleep(1_000);
  if (process.env.BENCH_TIMELINE) timeline(process.env.BENCH_TIMELINE, arena, asks);
  return {
    threads: n,
    turns: results.map((r, i) => withWrites(arena, asks[i] as Asked, Number.POSITIVE_INFINITY, r)),
    allDoneMs: doneAt - start,
    limited: arena.watch.limitedSince(mark),
    asked: asks,
  };
}

/**
 * BENCH_TIMELINE=<file>: every write of a crowd's threads, one JSON line per thread (ms
 * after its mention), appended for digging into where an answer's last seconds went.
 */
function timeline(file: string, arena: Arena, asks: Asked[]): void {
  const byThread = new Map(asks.map((a) => [a.thread, { asked: a.at, writes: [] as string[] }]));
  for (const e of arena.watch.events) {
    const t = byThread.get(e.thread);
    if (t) t.writes.push(`${e.at - t.asked} ${e.method}`);
  }
  const lines = [...byThread].map(([thread, t]) =>
    JSON.stringify({ bot: arena.bot, n: asks.length, thread, ...t }),
  );
  appendFileSync(file, `${lines.join("\n")}\n`);
}
