/**
 * Replicas on Redis, as an operator runs them: the built app (`node <build>/main.js start`)
 * in separate processes, Socket Mode against the Slack emulator, the LLM emulator, Redis
 * at TEST_REDIS_URL (default redis://127.0.0.1:6379/9; this benchmark uses the next
 * database and deletes only the app's keys there).
 * - Takeover: one replica streams five answers (one per channel), a second is idle; the
 *   first is killed (SIGKILL). Kill -> the taker's first write in each cut-off message
 *   (lock handover and resume), and kill -> the whole answer there; baseline: the model's
 *   own time for that answer, measured in the same run before the kill.
 * - Redis against SQLite, same run: one process, ten short conversations one after the
 *   other; first visible and final text p50 on each store, and the Redis commands per turn.
 * - One budget: 30 threads in 30 channels at once, Slack's documented workspace tiers
 *   (chat.update 50 a minute for the whole workspace), answered by three replicas and,
 *   as the baseline, by one: the 429s each setup met, and the final text p50 / p99.
 * Run alone: `npm run bench -- replicas`.
 */
import { LlmEmulator } from "../test/emulators/llm/index.js";
import { type EmuMessage, SlackEmulator } from "../test/emulators/slack/index.js";
import { SLACK_PER_CHANNEL_LIMITS } from "../test/emulators/slack/rate-limit.js";
import { type AppBuild, buildApp } from "./support/load-build.js";
import { killAll } from "./support/load-process.js";
import {
  answer,
  channels,
  cleanRedis,
  model,
  type Replica,
  redisCommands,
  redisUrl,
  sleep,
  startReplica,
  stop,
  until,
} from "./support/replicas.js";
import { atMost, type BenchResult, fmt, ratio } from "./support/report.js";
import { p50 } from "./support/stats.js";

/** Targets: a cut-off answer is written on again within 8 s of the kill (4 s heartbeat, 2 s watch, start); Redis adds at most 100 ms per turn. */
const TARGET_RESUME_MS = 8_000;
const TARGET_REDIS_ADDED_MS = 100;

/** Kill -9 of the replica streaming five answers; a second replica finishes them. */
async function takeover(build: AppBuild) {
  await cleanRedis();
  const llm = await LlmEmulator.start({ responder: model(() => 150, 60) });
  const slack = await SlackEmulator.start({ rateLimits: SLACK_PER_CHANNEL_LIMITS });
  const started: Replica[] = [];
  try {
    const yaml = "slack:\n  updateIntervalMs: 1000\n  nativeStreaming: false\n";
    // The model's own time for one answer, on this machine now: the baseline.
    const warm = await startReplica(build, llm, slack, redisUrl, yaml);
    started.push(warm);
    const [c0] = channels(slack, 1, "W");
    const t0 = Date.now();
    const w = slack.mention(c0!, "U_BOB", "warm-up");
    await until(() => slack.botReplies(c0!, w.ts)[0]?.text === answer("warm-up", 150), "the warm-up answer");
    const modelMs = Date.now() - t0;

    const doomed = await startReplica(build, llm, slack, redisUrl, yaml);
    started.push(doomed);
    // Only the doomed replica is connected while the questions arrive: it gets them all.
    await warm.proc.kill();
    const cs = channels(slack, 5, "K");
    const asked = cs.map((c, i) => ({ c, m: slack.mention(c, "U_BOB", `k${i}`), q: `k${i}` }));
    const reply = (a: { c: string; m: EmuMessage }) => slack.botReplies(a.c, a.m.ts)[0];
    await until(() => asked.every((a) => (reply(a)?.edits.length ?? 0) >= 1), "five answers streaming");
    const taker = await startReplica(build, llm, slack, redisUrl, yaml);
    started.push(taker);
    const shownAtKill = asked.map((a) => reply(a)?.edits.length ?? 0);
    doomed.proc.child.kill("SIGKILL");
    const killed = Date.now();
    const resumed: number[] = [];
    const done: number[] = [];
    await until(
      () => {
        asked.forEach((a, i) => {
          const r = reply(a);
          if (resumed[i] === undefined && (r?.edits.length ?? 0) > shownAtKill[i]!)
            resumed[i] = Date.now() - killed;
          if (done[i] === undefined && r?.text === answer(a.q, 150)) done[i] = Date.now() - killed;
        });
        return done.filter((d) => d !== undefined).length === asked.length;
      },
      "the five answers to be finished",
      120_000,
    );
    const extra = asked.filter((a) => slack.botReplies(a.c, a.m.ts).length !== 1).length;
    return {
      modelMs,
      resumeP50: p50(resumed),
      resumeMax: Math.max(...resumed),
      doneP50: p50(done),
      doneMax: Math.max(...done),
      extra,
    };
  } finally {
    await stop(started);
    await slack.stop();
    await llm.close();
    // Nothing left behind: a test sharing the Redis server must not meet these dedupe keys.
    await cleanRedis();
  }
}

/** Ten short conversations one after the other on one process: SQLite, then Redis. */
async function perTurn(build: AppBuild, store: "sqlite" | "redis") {
  if (store === "redis") await cleanRedis();
  const llm = await LlmEmulator.start({ responder: model(() => 10, 5) });
  const slack = await SlackEmulator.start({ rateLimits: SLACK_PER_CHANNEL_LIMITS });
  const replica = await startReplica(
    build,
    llm,
    slack,
    store === "redis" ? redisUrl : undefined,
    "slack:\n  nativeStreaming: false\n",
  );
  try {
    const first: number[] = [];
    const final: number[] = [];
    const cs = channels(slack, 10, "T");
    // Redis commands of the turns themselves, not of start-up.
    const before = store === "redis" ? await redisCommands() : 0;
    for (const [i, c] of cs.entries()) {
      const at = Date.now();
      const m = slack.mention(c, "U_BOB", `t${i}`);
      await until(() => slack.botReplies(c, m.ts).length > 0, "the first write");
      first.push(Date.now() - at);
      await until(() => slack.botReplies(c, m.ts)[0]?.text === answer(`t${i}`, 10), "the answer");
      final.push(Date.now() - at);
      await sleep(300);
    }
    const commands = store === "redis" ? ((await redisCommands()) - before) / cs.length : 0;
    return { first: p50(first), final: p50(final), commands };
  } finally {
    await stop([replica]);
    await slack.stop();
    await llm.close();
    // Nothing left behind: a test sharing the Redis server must not meet these dedupe keys.
    await cleanRedis();
  }
}

/** 30 threads at once under the workspace tiers, on `n` replicas sharing Redis. */
async function oneBudget(build: AppBuild, n: number) {
  await cleanRedis();
  const llm = await LlmEmulator.start({ responder: model(() => 60, 40) });
  const slack = await SlackEmulator.start();
  const replicas: Replica[] = [];
  try {
    const yaml = "slack:\n  updateIntervalMs: 250\n  nativeStreaming: false\n";
    for (let i = 0; i < n; i++) replicas.push(await startReplica(build, llm, slack, redisUrl, yaml));
    const cs = channels(slack, 30, "B");
    const at = Date.now();
    const asked = cs.map((c, i) => ({ c, m: slack.mention(c, "U_BOB", `b${i}`), q: `b${i}` }));
    const final: number[] = [];
    await until(
      () => {
        asked.forEach((a, i) => {
          if (
            final[i] === undefined &&
            slack
              .botReplies(a.c, a.m.ts)
              .map((r) => r.text)
              .join("") === answer(a.q, 60)
          )
            final[i] = Date.now() - at;
        });
        return final.filter((f) => f !== undefined).length === asked.length;
      },
      "thirty answers",
      240_000,
    );
    const hits = slack.api.calls.filter((c) => c.error === "ratelimited");
    const limited = hits.length;
    const byMethod = [...new Set(hits.map((c) => c.method))]
      .map((m) => `${m} ${hits.filter((c) => c.method === m).length}`)
      .join(", ");
    const sorted = [...final].sort((a, b) => a - b);
    return { limited, byMethod, p50: p50(final), p99: sorted[Math.floor(0.99 * (sorted.length - 1))]! };
  } finally {
    await stop(replicas);
    await slack.stop();
    await llm.close();
    // Nothing left behind: a test sharing the Redis server must not meet these dedupe keys.
    await cleanRedis();
  }
}

export async function run(): Promise<BenchResult> {
  const build = await buildApp();
  try {
    const t = await takeover(build);
    const sqlite = await perTurn(build, "sqlite");
    const redis = await perTurn(build, "redis");
    const one = await oneBudget(build, 1);
    const three = await oneBudget(build, 3);
    const added = redis.final - sqlite.final;
    return {
      about:
        "Replicas on Redis (built app, separate processes, Slack emulator, LLM emulator): kill -9 of the replica " +
        "streaming five answers with another one idle; ten short turns on SQLite then Redis; 30 threads at once " +
        "under Slack's workspace tiers on three replicas and on one.",
      figures: {
        "takeover: model time for one answer, same run (ms)": fmt(t.modelMs),
        "takeover: kill -> first write of the taker p50 / max (ms)": `${fmt(t.resumeP50)} / ${fmt(t.resumeMax)}`,
        "takeover: kill -> whole answer p50 / max (ms)": `${fmt(t.doneP50)} / ${fmt(t.doneMax)}`,
        "takeover: threads with a second bot message": String(t.extra),
        "per turn: first visible p50, SQLite / Redis (ms)": `${fmt(sqlite.first)} / ${fmt(redis.first)}`,
        "per turn: final text p50, SQLite / Redis (ms)": `${fmt(sqlite.final)} / ${fmt(redis.final)}`,
        "per turn: Redis commands (all, with heartbeats and budget sync)": fmt(redis.commands),
        "30 threads, workspace tiers: 429s, one replica / three": `${one.limited} / ${three.limited}`,
        "30 threads: 429s by method, one replica": one.byMethod || "none",
        "30 threads: 429s by method, three replicas": three.byMethod || "none",
        "30 threads: final text p50 / p99, one replica (ms)": `${fmt(one.p50)} / ${fmt(one.p99)}`,
        "30 threads: final text p50 / p99, three replicas (ms)": `${fmt(three.p50)} / ${fmt(three.p99)}`,
        "three replicas / one (final p99)": ratio(three.p99, one.p99),
      },
      checks: [
        atMost("kill -> first write of the taker (max)", t.resumeMax, TARGET_RESUME_MS, "ms"),
        atMost("threads with a second bot message after the takeover", t.extra, 0, ""),
        atMost("Redis minus SQLite, final text p50 per turn", added, TARGET_REDIS_ADDED_MS, "ms"),
        atMost("429s with three replicas beyond one replica's", three.limited - one.limited, 5, ""),
      ],
    };
  } finally {
    await killAll();
    build.remove();
  }
}
