/**
 * Tracing's cost (issue: see and steer what it costs): the built app as its own process,
 * Socket Mode against the Slack emulator, the LLM emulator, SQLite. The same tool-using
 * turns (a model call, a tool call, the answer: three spans and the writes' under the
 * turn's) are answered by two processes side by side, each in a Slack workspace of its
 * own: one with tracing off, one exporting over OTLP/HTTP to a receiver on 127.0.0.1.
 * Side by side, the machine's moods weigh on both alike (run one after the other, the same
 * process measured 20 ms a turn one evening and 39 ms the next morning). The figure is the
 * on / off ratio of each process's CPU per turn (from /proc) in the median of the rounds,
 * once both are warm: after BENCH_TRACING_WARM_UP turns (default 300) and the traced side's
 * first export, whose one-time set-up (loading and compiling the encoder, the connection)
 * is reported apart. Warm means V8 too: it optimizes the bot's hot functions on background
 * threads for the first several hundred turns (--trace-opt: about 380, 440, 230, 170, 160,
 * 110, 90 functions in successive 4-second spans from the start), and the traced side has
 * more of them; measured after 60 turns, that one-time work weighed as per-turn cost.
 * Run alone: `npm run bench -- tracing` (BENCH_TRACING_ROUNDS, default 5;
 * BENCH_TRACING_TURNS per round, default 400).
 * BENCH_TRACING_CONTROL=1 leaves both sides untraced: an A/A run, the bench's own noise.
 * Spans go in OTLP/HTTP's default encoding, protobuf, unless BENCH_TRACING_PROTOCOL says otherwise. */
import { rmSync } from "node:fs";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../test/emulators/llm/index.js";
import { SlackEmulator } from "../test/emulators/slack/index.js";
import { SLACK_PER_CHANNEL_LIMITS } from "../test/emulators/slack/rate-limit.js";
import { appEnv } from "../test/support/app-env.js";
import { everythingMcp, scratchConfig } from "../test/support/chat-process.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "../test/support/llm-text.js";
import { OtlpReceiver } from "../test/support/otlp-receiver.js";
import { type AppBuild, buildApp, repoRoot } from "./support/load-build.js";
import { cpuByThread, cpuSeconds, freePort, killAll, spawnBot, waitReady } from "./support/load-process.js";
import { channels, until } from "./support/replicas.js";
import { atMost, type BenchResult, fmt } from "./support/report.js";

const TURNS = Number(process.env.BENCH_TRACING_TURNS ?? 400);
const WARM_UP = Number(process.env.BENCH_TRACING_WARM_UP ?? 300);
const ROUNDS = Number(process.env.BENCH_TRACING_ROUNDS ?? 5);
/** Turns answered at once by each side. */
const AT_ONCE = 5;
/** Tracing may add at most 2 % CPU per turn. */
const TARGET_RATIO = 1.02;

function responder(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Bench" };
  if (toolResultsSinceUser(req).length === 0)
    return { toolCalls: [{ name: "everything__echo", arguments: { message: "traced" } }] };
  return { text: `Echoed for ${lastUserText(req).replace(/^\[[^\]]*\]\s*/, "")}.`, chunkSize: 40 };
}

/** The traced side's OpenTelemetry variables; BENCH_TRACING_PROTOCOL=http/json measures the JSON encoding. */
function tracedEnv(receiver: OtlpReceiver): Record<string, string> {
  const protocol = process.env.BENCH_TRACING_PROTOCOL;
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    ...(protocol && { OTEL_EXPORTER_OTLP_PROTOCOL: protocol }),
  };
}

/** One bot process with its own Slack workspace, ready for turns. */
interface Side {
  cpu(): number;
  threads(): { main: number; others: number };
  /** Answers `n` questions, five threads at a time, from question number `from`. */
  batch(from: number, n: number): Promise<void>;
  stop(): Promise<void>;
}

async function startSide(
  build: AppBuild,
  llm: LlmEmulator,
  traced: OtlpReceiver | undefined,
  round: number,
): Promise<Side> {
  // A workspace of its own: a round must not find the last one's minute of chat.update spent.
  const slack = await SlackEmulator.start({ rateLimits: SLACK_PER_CHANNEL_LIMITS });
  const port = await freePort();
  const dir = scratchConfig(
    `llm:\n  maxRetries: 0\nhealth:\n  host: 127.0.0.1\n  port: ${port}\nslack:\n  nativeStreaming: false\n` +
      "approvals:\n  rules:\n    - { server: everything, mode: always }\n",
    everythingMcp,
  );
  const env = {
    ...appEnv({
      dir,
      llm,
      slack,
      ...(traced ? { extra: tracedEnv(traced) } : {}),
    }),
    LOG_LEVEL: "error",
  };
  // BENCH_TRACING_PROFILE_DIR: each process writes a V8 CPU profile there (on/, off/) when it exits.
  const profiles = process.env.BENCH_TRACING_PROFILE_DIR;
  const profile = profiles ? ["--cpu-prof", `--cpu-prof-dir=${profiles}/${traced ? "on" : "off"}`] : [];
  const proc = spawnBot("Switchboard", [...profile, build.main, "start"], env, repoRoot);
  const stop = async () => {
    await proc.kill();
    await slack.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitReady(proc, async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, 60_000);
  } catch (err) {
    await stop();
    throw err;
  }
  // Five at a time over 25 channels: a long round must not spend a channel's minute of chat.update.
  const places = channels(slack, 25, `T${traced ? "on" : "off"}${round}x`);
  const ask = async (i: number) => {
    const channel = places[i % places.length]!;
    const q = `q${i}`;
    const m = slack.mention(channel, "U_BOB", q);
    await until(() => slack.botReplies(channel, m.ts).some((r) => r.text === `Echoed for ${q}.`), q, 30_000);
  };
  return {
    cpu: () => cpuSeconds(proc.pid),
    threads: () => cpuByThread(proc.pid),
    // Five threads at a time: a steady load, not one turn in a quiet process.
    async batch(from, n) {
      for (let i = from; i < from + n; i += AT_ONCE)
        await Promise.all(Array.from({ length: Math.min(AT_ONCE, from + n - i) }, (_, k) => ask(i + k)));
    },
    stop,
  };
}

/** Waits until the receiver has taken one more export than it had (the exporter sends every 5 s). */
async function firstExport(receiver: OtlpReceiver): Promise<void> {
  const had = receiver.requests.length;
  await until(() => receiver.requests.length > had, "the traced side's first export", 15_000);
}

/**
 * CPU per turn of a process with tracing off and one with it on, side by side: both get
 * the same turns at the same moments, so the machine's moods (and the background work a
 * process does per second rather than per turn) weigh on both alike.
 */
async function round(
  build: AppBuild,
  llm: LlmEmulator,
  receiver: OtlpReceiver,
  n: number,
): Promise<{
  off: number;
  on: number;
  offOthers: number;
  onOthers: number;
  warmUpOff: number;
  warmUpOn: number;
}> {
  // BENCH_TRACING_CONTROL=1: both sides untraced, to read the bench's own bias (an A/A run).
  const tracedOn = process.env.BENCH_TRACING_CONTROL !== "1";
  const [off, on] = await Promise.all([
    startSide(build, llm, undefined, n),
    startSide(build, llm, tracedOn ? receiver : undefined, n),
  ]);
  try {
    const start = { off: off.cpu(), on: on.cpu() };
    await Promise.all([off.batch(0, WARM_UP), on.batch(0, WARM_UP)]);
    // The exporter's first batch loads and compiles its encoder and opens its connection:
    // once per process, not per turn. Measured turns begin after it (reported apart).
    if (tracedOn) await firstExport(receiver);
    const before = {
      off: off.cpu(),
      on: on.cpu(),
      offOthers: off.threads().others,
      onOthers: on.threads().others,
    };
    await Promise.all([off.batch(WARM_UP, TURNS), on.batch(WARM_UP, TURNS)]);
    return {
      warmUpOff: before.off - start.off,
      warmUpOn: before.on - start.on,
      off: (off.cpu() - before.off) / TURNS,
      on: (on.cpu() - before.on) / TURNS,
      offOthers: (off.threads().others - before.offOthers) / TURNS,
      onOthers: (on.threads().others - before.onOthers) / TURNS,
    };
  } finally {
    await Promise.all([off.stop(), on.stop()]);
  }
}

export async function run(): Promise<BenchResult> {
  const build = await buildApp();
  const llm = await LlmEmulator.start({ responder });
  const receiver = await OtlpReceiver.start();
  try {
    const off: number[] = [];
    const on: number[] = [];
    const others: string[] = [];
    const warmUps: string[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const pair = await round(build, llm, receiver, r);
      off.push(pair.off);
      on.push(pair.on);
      others.push(`${fmt(pair.offOthers * 1000, 2)} / ${fmt(pair.onOthers * 1000, 2)}`);
      warmUps.push(`${fmt(pair.warmUpOff * 1000, 0)} / ${fmt(pair.warmUpOn * 1000, 0)}`);
    }
    // The median round's ratio: one process's JIT or GC luck is not tracing's cost.
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
    const ratios = on.map((x, i) => x / (off[i] ?? Number.NaN));
    const [offMs, onMs] = [median(off) * 1000, median(on) * 1000];
    const turnSpans = receiver.spans.filter((s) => s.name === "switchboard.turn").length;
    return {
      about:
        `Tracing off against tracing on (OTLP/HTTP, ${process.env.BENCH_TRACING_PROTOCOL ?? "http/protobuf"}, to a receiver on 127.0.0.1), two processes side by side, ${ROUNDS} rounds of ` +
        `${TURNS} tool-using turns each (after ${WARM_UP} to warm up and, on the traced side, its first export), five threads at a time; the built app on ` +
        "SQLite, Socket Mode against the Slack emulator, the LLM emulator. CPU of the bot's process from /proc.",
      figures: {
        "CPU per turn, tracing off, each round (ms)": off.map((x) => fmt(x * 1000, 1)).join(" / "),
        "CPU per turn, tracing on, each round (ms)": on.map((x) => fmt(x * 1000, 1)).join(" / "),
        "CPU per turn, off / on, median of each (ms)": `${fmt(offMs, 1)} / ${fmt(onMs, 1)}`,
        "on / off, each round": ratios.map((x) => fmt(x, 3)).join(" / "),
        "of which threads other than the main one (GC helpers, libuv), off / on, each round (ms)":
          others.join("; "),
        [`CPU of the ${WARM_UP} warm-up turns, with the traced side's first export (its one-time set-up), off / on, each round (ms)`]:
          warmUps.join("; "),
        "spans received (all) / turn spans": `${receiver.spans.length} / ${turnSpans}`,
      },
      checks: [
        atMost("tracing on / off, CPU per turn (median round)", median(ratios), TARGET_RATIO, "×"),
        atMost("turns traced without a turn span", ROUNDS * (TURNS + WARM_UP) - turnSpans, 0, ""),
      ],
    };
  } finally {
    await killAll();
    await receiver.close();
    await llm.close();
    build.remove();
  }
}
