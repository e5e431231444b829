/**
 * Replicas under load (issue 13): the built app as separate processes sharing Redis, Socket
 * Mode against the Slack emulator with per-channel limits, the LLM emulator.
 * - A crowd: 200 threads at once (one per channel), answered by one replica and then by
 *   three sharing the store and the write budget; first visible and final text p50 / p99,
 *   the final text over the model's own time for one answer (measured first, same run),
 *   and the 429s each setup met.
 * - A rolling restart: 30 threads, each sending a message every second, while the three
 *   replicas are restarted one by one (SIGTERM, a fresh one started at once); baseline: the
 *   same chatter for as long without a restart. Messages lost, told to ask again and
 *   answered twice, time to answer p50 / p99, each replica's exit after SIGTERM.
 * Run alone: `npm run bench -- replicas-load`.
 */

import { INTERRUPTED_NOTE } from "../src/runtime/dispatcher.js";
import { LlmEmulator } from "../test/emulators/llm/index.js";
import { SlackEmulator } from "../test/emulators/slack/index.js";
import { SLACK_PER_CHANNEL_LIMITS } from "../test/emulators/slack/rate-limit.js";
import { type AppBuild, buildApp } from "./support/load-build.js";
import { killAll } from "./support/load-process.js";
import {
  answer,
  channels,
  cleanRedis,
  model,
  type Replica,
  redisUrl,
  sleep,
  startReplica,
  stop,
  until,
} from "./support/replicas.js";
import { atMost, type BenchResult, fmt, ratio } from "./support/report.js";
import { p50, percentile } from "./support/stats.js";

const CROWD = Number(process.env.BENCH_REPLICAS_CROWD ?? 200);
const ROLL_THREADS = Number(process.env.BENCH_REPLICAS_ROLL_THREADS ?? 30);
/** Stages to run ("crowd", "roll", "calm"), all by default: a post-mortem of one needs no other. */
const STAGES = (process.env.BENCH_REPLICAS_STAGES ?? "crowd,roll,calm").split(",").map((x) => x.trim());
const EMPTY_CROWD = { modelMs: 0, first: [], final: [], limited: 0, byMethod: "", extra: 0 };
/** How long the chatter lasts without the roll (with it, as long as the roll took). */
const CHAT_MS = Number(process.env.BENCH_REPLICAS_CHAT_S ?? 24) * 1000;
const EMPTY_CHAT = {
  sent: 0,
  lost: 0,
  notes: 0,
  twice: 0,
  times: [] as number[],
  exits: [] as number[],
  chattedMs: CHAT_MS,
};
/** Each replica's shutdown grace in the roll: it must exit within it (plus start-up slack). */
const GRACE_MS = 5_000;
/** No answer for this long while some are missing: the bots are done, and the rest are lost. */
// Longer than the longest Retry-After a bot may be told to wait (Slack's per-minute windows:
// up to 60 s): with 30 s, answers paused by a 29 s Retry-After on `chat.update` of their
// channel were counted as lost while they were still coming (the kept logs showed them end).
const QUIET_MS = 90_000;
/** Targets: three replicas' final text p99 at most this times one replica's; no more 429s than one replica. */
const TARGET_CROWD_P99_RATIO = 1.25;

const p99 = (xs: number[]) => percentile(xs, 99);

/** The joined text of a thread's bot replies: an answer may take more than one message. */
const joined = (slack: SlackEmulator, c: string, ts: string) =>
  slack
    .botReplies(c, ts)
    .map((r) => r.text)
    .join("");

/** 200 threads at once on `n` replicas: when each showed something and its whole answer. */
export async function crowd(build: AppBuild, n: number) {
  await cleanRedis();
  const words = 200;
  const llm = await LlmEmulator.start({ responder: model(() => words, 120) });
  const slack = await SlackEmulator.start({ rateLimits: SLACK_PER_CHANNEL_LIMITS });
  const replicas: Replica[] = [];
  try {
    const yaml = "slack:\n  nativeStreaming: false\n";
    for (let i = 0; i < n; i++) replicas.push(await startReplica(build, llm, slack, redisUrl, yaml));
    // The model's own time for one answer, now: the baseline of the final text.
    const [w] = channels(slack, 1, "W");
    const t0 = Date.now();
    const warm = slack.mention(w!, "U_BOB", "warm-up");
    await until(() => joined(slack, w!, warm.ts) === answer("warm-up", words), "the warm-up answer");
    const modelMs = Date.now() - t0;
    const callsBefore = slack.api.calls.length;

    const cs = channels(slack, CROWD, "L");
    const asked = cs.map((c, i) => ({
      c,
      at: Date.now(),
      m: slack.mention(c, "U_BOB", `l${i}`),
      q: `l${i}`,
    }));
    const first: number[] = [];
    const final: number[] = [];
    await until(
      () => {
        asked.forEach((a, i) => {
          const replies = slack.botReplies(a.c, a.m.ts);
          if (first[i] === undefined && replies.length > 0) first[i] = Date.now() - a.at;
          if (final[i] === undefined && replies.map((r) => r.text).join("") === answer(a.q, words))
            final[i] = Date.now() - a.at;
        });
        return final.filter((f) => f !== undefined).length === asked.length;
      },
      `${CROWD} answers on ${n} replica(s)`,
      300_000,
    );
    const hits = slack.api.calls.slice(callsBefore).filter((c) => c.error === "ratelimited");
    const byMethod = [...new Set(hits.map((c) => c.method))]
      .map((m) => `${m} ${hits.filter((c) => c.method === m).length}`)
      .join(", ");
    const extra = asked.filter((a) => slack.botReplies(a.c, a.m.ts).length !== 1).length;
    return { modelMs, first, final, limited: hits.length, byMethod, extra };
  } finally {
    await stop(replicas);
    await slack.stop();
    await llm.close();
    // Nothing left behind: a test sharing the Redis server must not meet these dedupe keys.
    await cleanRedis();
  }
}

interface Sent {
  channel: string;
  thread: string;
  text: string;
  at: number;
}

/**
 * 30 threads chatting, one message a second each, for `chatMs`; with `roll`, the three
 * replicas are restarted one by one meanwhile. Every message's answer is waited for.
 */
export async function chatter(build: AppBuild, roll: boolean, chatMs: number) {
  await cleanRedis();
  const short = (q: string) => answer(q, 30);
  const llm = await LlmEmulator.start({ responder: model(() => 30, 50) });
  const slack = await SlackEmulator.start({ rateLimits: SLACK_PER_CHANNEL_LIMITS });
  const replicas: Replica[] = [];
  const yaml = `shutdown:\n  graceMs: ${GRACE_MS}\nslack:\n  updateIntervalMs: 1000\n  nativeStreaming: false\n`;
  const exits: number[] = [];
  try {
    for (let i = 0; i < 3; i++) replicas.push(await startReplica(build, llm, slack, redisUrl, yaml));
    const sent: Sent[] = [];
    const threads = channels(slack, ROLL_THREADS, roll ? "R" : "Q").map((c, i) => {
      const text = `${c}-m0`;
      const root = slack.mention(c, "U_BOB", text);
      sent.push({ channel: c, thread: root.ts, text, at: Date.now() });
      return { channel: c, thread: root.ts, n: 0, i };
    });
    const timer = setInterval(() => {
      for (const t of threads) {
        t.n += 1;
        const text = `${t.channel}-m${t.n}`;
        slack.post(t.channel, "U_BOB", text, { threadTs: t.thread });
        sent.push({ channel: t.channel, thread: t.thread, text, at: Date.now() });
      }
    }, 1_000);
    const chatStarted = Date.now();
    let chattedMs = 0;
    try {
      if (roll) {
        const gap = chatMs / (replicas.length + 1);
        for (let r = 0; r < replicas.length; r++) {
          await sleep(gap);
          const old = replicas[r]!;
          const signalled = Date.now();
          old.proc.child.kill("SIGTERM");
          // A new replica starts at once, as an orchestrator's rolling update does.
          const next = startReplica(build, llm, slack, redisUrl, yaml);
          const exited = await Promise.race([old.proc.exited.then(() => true), sleep(GRACE_MS + 15_000)]);
          if (!exited) {
            process.stderr.write(
              `  a replica did not exit after SIGTERM; its last output:\n${old.proc.output()}\n`,
            );
            old.proc.child.kill("SIGKILL");
          }
          exits.push(exited ? Date.now() - signalled : Number.POSITIVE_INFINITY);
          await stop([old]);
          replicas[r] = await next;
        }
      }
      await sleep(Math.max(0, chatMs - (Date.now() - chatStarted)));
    } finally {
      clearInterval(timer);
      chattedMs = Date.now() - chatStarted;
    }

    const answeredAt = new Map<string, number>();
    const answers = (m: Sent) => joined(slack, m.channel, m.thread).split(short(m.text)).length - 1;
    // Answers queue behind Slack's per-channel post rate: waited for while they keep coming;
    // what is unanswered once none came for QUIET_MS is lost, not late.
    let lastAnswer = Date.now();
    await until(
      () => {
        const before = answeredAt.size;
        for (const m of sent)
          if (!answeredAt.has(m.text) && answers(m) > 0) answeredAt.set(m.text, Date.now() - m.at);
        if (answeredAt.size > before) lastAnswer = Date.now();
        return answeredAt.size === sent.length || Date.now() - lastAnswer > QUIET_MS;
      },
      "every message to be answered",
      900_000,
    ).catch(() => undefined);
    // Late second copies show up after the last answer, if at all.
    await sleep(2_000);
    const twice = sent.filter((m) => answers(m) > 1).length;
    const times = [...answeredAt.values()];
    // A message a stopping replica could neither answer nor hand over is told to ask again.
    const notes = threads
      .flatMap((t) => slack.botReplies(t.channel, t.thread))
      .filter((r) => r.text.includes(INTERRUPTED_NOTE)).length;
    const unanswered = sent.filter((m) => answers(m) === 0).length;
    if (unanswered > notes && process.env.BENCH_SHOW_LOST) {
      for (const m of sent.filter((x) => answers(x) === 0).slice(0, 5))
        process.stderr.write(
          `  lost ${m.text}: ${slack
            .botReplies(m.channel, m.thread)
            .slice(-3)
            .map((r) => r.text.slice(-40))
            .join(" | ")}\n`,
        );
    }
    return {
      sent: sent.length,
      lost: Math.max(0, unanswered - notes),
      notes,
      twice,
      times,
      exits,
      chattedMs,
    };
  } finally {
    await stop(replicas);
    await slack.stop();
    await llm.close();
    // Nothing left behind: a test sharing the Redis server must not meet these dedupe keys.
    await cleanRedis();
  }
}

const pair = (a: number, b: number) => `${fmt(a)} / ${fmt(b)}`;

export async function run(): Promise<BenchResult> {
  const build = await buildApp();
  try {
    const on = (stage: string) => STAGES.includes(stage);
    process.stderr.write(`  replicas-load: ${CROWD} threads on one replica\n`);
    const one = on("crowd") ? await crowd(build, 1) : EMPTY_CROWD;
    process.stderr.write(`  replicas-load: ${CROWD} threads on three replicas\n`);
    const three = on("crowd") ? await crowd(build, 3) : EMPTY_CROWD;
    process.stderr.write(`  replicas-load: ${ROLL_THREADS} threads chatting through a rolling restart\n`);
    const rolled = on("roll") ? await chatter(build, true, 24_000) : EMPTY_CHAT;
    // The baseline chats for as long as the roll took, so both see the same load.
    process.stderr.write(`  replicas-load: ${ROLL_THREADS} threads chatting, no restart\n`);
    const calm = on("calm") ? await chatter(build, false, rolled.chattedMs) : EMPTY_CHAT;
    const chatMs = rolled.chattedMs;
    const over = (c: typeof one, xs: number[]) => xs.map((x) => x - c.modelMs);
    return {
      about:
        `Replicas under load on Redis (built app, separate processes, Slack emulator with per-channel limits, LLM ` +
        `emulator): ${CROWD} threads at once on one replica and on three; ${ROLL_THREADS} threads sending a message ` +
        `a second each for ${chatMs / 1000} s, through a rolling restart of the three replicas and without one.`,
      figures: {
        "crowd: model time for one answer, one replica / three (ms)": pair(one.modelMs, three.modelMs),
        "crowd: first visible p50, one replica / three (ms)": pair(p50(one.first), p50(three.first)),
        "crowd: first visible p99, one replica / three (ms)": pair(p99(one.first), p99(three.first)),
        "crowd: final text p50 over the model, one replica / three (ms)": pair(
          p50(over(one, one.final)),
          p50(over(three, three.final)),
        ),
        "crowd: final text p99 over the model, one replica / three (ms)": pair(
          p99(over(one, one.final)),
          p99(over(three, three.final)),
        ),
        "crowd: 429s, one replica / three": pair(one.limited, three.limited),
        "crowd: 429s by method, one replica": one.byMethod || "none",
        "crowd: 429s by method, three replicas": three.byMethod || "none",
        "crowd: threads with more than one bot message, one replica / three": pair(one.extra, three.extra),
        "crowd: three replicas / one (final p99)": ratio(p99(three.final), p99(one.final)),
        "chatter: messages sent, no restart / rolling restart": pair(calm.sent, rolled.sent),
        "chatter: lost (no answer, no restart note), no restart / rolling restart": pair(
          calm.lost,
          rolled.lost,
        ),
        "chatter: told to ask again (restart note), no restart / rolling restart": pair(
          calm.notes,
          rolled.notes,
        ),
        "chatter: answered twice, no restart / rolling restart": pair(calm.twice, rolled.twice),
        "chatter: time to answer p50, no restart / rolling restart (ms)": pair(
          p50(calm.times),
          p50(rolled.times),
        ),
        "chatter: time to answer p99, no restart / rolling restart (ms)": pair(
          p99(calm.times),
          p99(rolled.times),
        ),
        "roll: each replica's exit after SIGTERM (ms)": rolled.exits.map(fmt).join(", "),
      },
      checks: [
        atMost("crowd: 429s with three replicas beyond one replica's", three.limited - one.limited, 0, ""),
        atMost(
          "crowd: final text p99, three replicas / one",
          p99(three.final) / p99(one.final),
          TARGET_CROWD_P99_RATIO,
          "×",
        ),
        atMost("crowd: threads with a second bot message (three replicas)", three.extra, 0, ""),
        atMost("rolling restart: messages lost", rolled.lost, 0, ""),
        atMost("rolling restart: messages answered twice", rolled.twice, 0, ""),
        atMost("rolling restart: messages told to ask again", rolled.notes, 0, ""),
        // The grace, then at most the dispatcher's 5 s for the handover to land.
        atMost(
          "rolling restart: slowest exit after SIGTERM",
          Math.max(...rolled.exits),
          GRACE_MS + 7_000,
          "ms",
        ),
      ],
    };
  } finally {
    await killAll();
    build.remove();
  }
}
