/**
 * Tracing's cost (issue: see and steer what it costs): the built app as its own process,
 * Socket Mode against the Slack emulator, the LLM emulator, SQLite, answering the same
 * tool-using turns (a model call, a tool call, the answer: the turn's span, its model,
 * tool and write spans) in stretches of BENCH_TRACING_STRETCH turns (default 100), five
 * threads at a time, with tracing switched on for every other stretch
 * (bench/support/tracing-switch.ts: started once as the app starts it, its tracer given
 * and taken away; exporting over OTLP/HTTP to a receiver on 127.0.0.1; a traced stretch
 * ends by flushing, with its last export).
 *
 * Why one process switched rather than a traced and an untraced process side by side, as
 * this bench did before: each process keeps its own luck for its whole life (where V8
 * placed and how it optimized its code, its heap's layout). Side by side, an untraced
 * pair (the A/A run) differed by 0.958-1.030 from round to round, and five runs of nearly
 * the same traced code gave medians from 1.002 to 1.075: one run could not tell 1 % from
 * 5 %. In one process both sides share that luck, and alternating stretches share the
 * machine's drift. Two processes run at once in opposite phase (one traced while the
 * other is not), each with its own Slack workspace, so the machine's load is the same
 * whichever side a stretch is on.
 *
 * Each process's CPU per turn (from /proc, every thread of it) in its traced stretches
 * over its untraced ones cancels its luck, and their order (untraced, traced, traced,
 * untraced, and so on) a steady drift; A is traced exactly when B is not, so the
 * geometric mean of the two ratios cancels what weighed on the whole machine at a moment
 * (a crossover design). No stretch forces a garbage collection. They once ended
 * with one, and each forced full collection deoptimized about a hundred of the
 * bot's hot functions at once (V8's "weak objects" dependencies; --log-deopt), so every
 * stretch began by compiling them again: about 600 TurboFan compilations per 10 s, a fifth
 * of the bots' CPU on V8's compiler threads, and 16 ms of CPU a turn where a bot left alone
 * spends 10. A major collection now falls where the heap calls for it, and the figure
 * leaves out each process's pairs of stretches that one fell in. Such a collection comes
 * about every eight stretches, adds 150-250 ms of CPU to its stretch (2-3 ms a turn: its
 * concurrent marking besides its 20-50 ms pause), and keeps its phase: in one run all
 * four of B's fell in traced stretches (on / off 1.090 for B, 1.026 for the figure), in
 * the next all four in untraced ones (0.969; 0.991), with the same code. So the figure
 * answered where seven collections landed more than what tracing costs. The collections
 * on each side are counted and shown, so that a tracing that made them more frequent
 * would still show. Before them,
 * BENCH_TRACING_WARM_UP turns (default 2,000) in alternating stretches of 50 warm both
 * paths (V8 optimizes the bot's hot functions over its first turns) and make the
 * exporter's first export, whose one-time set-up (loading and compiling the encoder) is
 * no turn's cost. After 500, on a 2-core AMD EPYC, the first four measured stretches
 * still cost 12-18 ms a turn, falling to about 9 by the tenth: a drift the stretches'
 * order cancels only on average, with every moment's ratio off by its slope. After
 * 2,000 the first stretch is already at 9 ms.
 *
 * Run alone: `npm run bench -- tracing` (BENCH_TRACING_PAIRS, traced and untraced
 * stretches per process, default 24). BENCH_TRACING_CONTROL=1 never switches tracing on:
 * an A/A run, the bench's own noise. BENCH_TRACING_PROFILE_DIR=<dir>: each process writes a
 * V8 CPU profile there when it exits. BENCH_BOT_LOG_DIR and BENCH_BOT_LOG_LEVEL keep the
 * bots' logs, as in the load bench.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import ts from "typescript";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../test/emulators/llm/index.js";
import { SlackEmulator } from "../test/emulators/slack/index.js";
import { SLACK_PER_CHANNEL_LIMITS } from "../test/emulators/slack/rate-limit.js";
import { appEnv } from "../test/support/app-env.js";
import { everythingMcp, scratchConfig } from "../test/support/chat-process.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "../test/support/llm-text.js";
import { OtlpReceiver } from "../test/support/otlp-receiver.js";
import { type AppBuild, buildApp, repoRoot } from "./support/load-build.js";
import { cpuByThread, cpuSeconds, freePort, killAll, spawnBot, waitReady } from "./support/load-process.js";
import { channels, sleep, until } from "./support/replicas.js";
import { atMost, type BenchResult, fmt } from "./support/report.js";

const STRETCH = Number(process.env.BENCH_TRACING_STRETCH ?? 100);
const PAIRS = Number(process.env.BENCH_TRACING_PAIRS ?? 24);
const WARM_UP = Number(process.env.BENCH_TRACING_WARM_UP ?? 2_000);
const WARM_UP_STRETCH = 50;
/** Turns answered at once by each process. */
const AT_ONCE = Number(process.env.BENCH_TRACING_AT_ONCE ?? 5);
/**
 * After a stretch's last answer, before its CPU is read: the turn's span ends after the
 * reply's last write, and the after-turn work (the title) follows it.
 */
const SETTLE_MS = 500;
/** Tracing may add at most 2 % CPU per turn. */
const TARGET_RATIO = 1.02;
const CONTROL = process.env.BENCH_TRACING_CONTROL === "1";
/** Turns answered with tracing on, in this run. */
let tracedTurns = 0;

function responder(req: RecordedRequest): ScriptedTurn {
  if (isTitleRequest(req)) return { text: "Bench" };
  if (toolResultsSinceUser(req).length === 0)
    return { toolCalls: [{ name: "everything__echo", arguments: { message: "traced" } }] };
  return { text: `Echoed for ${lastUserText(req).replace(/^\[[^\]]*\]\s*/, "")}.`, chunkSize: 40 };
}

/** One bot process with its own Slack workspace, its tracing switched from the outside. */
interface Bot {
  cpu(): number;
  /** CPU seconds of the main thread, and of all other threads (V8's compiler and GC helpers, libuv's pool). */
  threads(): { main: number; others: number };
  /** The process's garbage collections so far: the major ones' count and ms, the minor ones' ms (its /metrics). */
  collections(): Promise<Collections>;
  /** Switches tracing on or off (in the A/A run, "on" changes nothing) and waits until done. */
  trace(on: boolean): Promise<void>;
  /** Answers `n` questions, five threads at a time, numbered on from the last batch's. */
  batch(n: number): Promise<void>;
  stop(): Promise<void>;
}

/** bench/support/tracing-switch.ts compiled beside the build's files, to run with plain node. */
function buildSwitch(build: AppBuild): string {
  const source = readFileSync(join(repoRoot, "bench/support/tracing-switch.ts"), "utf8");
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2023 },
  });
  const file = join(dirname(build.main), "tracing-switch.js");
  writeFileSync(file, outputText);
  return file;
}

async function startBot(
  build: AppBuild,
  script: string,
  llm: LlmEmulator,
  receiver: OtlpReceiver,
  name: string,
): Promise<Bot> {
  const slack = await SlackEmulator.start({ rateLimits: SLACK_PER_CHANNEL_LIMITS });
  const port = await freePort();
  const dir = scratchConfig(
    `llm:\n  maxRetries: 0\nhealth:\n  host: 127.0.0.1\n  port: ${port}\nslack:\n  nativeStreaming: false\n` +
      "approvals:\n  rules:\n    - { server: everything, mode: always }\n",
    everythingMcp,
  );
  const env = {
    ...appEnv({ dir, llm, slack }),
    LOG_LEVEL: process.env.BENCH_BOT_LOG_LEVEL ?? "error",
    TRACING_SWITCH_ENDPOINT: receiver.endpoint,
  };
  const profiles = process.env.BENCH_TRACING_PROFILE_DIR;
  const profile = profiles ? ["--cpu-prof", `--cpu-prof-dir=${profiles}`] : [];
  const proc = spawnBot(`Switchboard ${name}`, [...profile, script, build.main, "start"], env, repoRoot);
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
  const answered: string[] = [];
  createInterface({ input: proc.child.stdout }).on("line", (line) => answered.push(line));
  const command = async (line: string) => {
    const had = answered.filter((l) => l === line).length;
    proc.child.stdin.write(`${line}\n`);
    await until(() => answered.filter((l) => l === line).length > had, `"${line}" from ${name}`, 30_000);
  };
  // A process answers ~30 turns a second here, two chat.updates each (the answer, its rating):
  // over 200 channels ~20 a minute per channel, clear of the emulator's 60 per channel, so
  // no turn waits out a 429's pause in a run that measures CPU. (Over 50, the channels
  // met 429s after ~1,500 turns.)
  const places = channels(slack, 200, `T${name}x`);
  let asked = 0;
  const ask = async (i: number) => {
    const channel = places[i % places.length]!;
    const q = `q${i}`;
    const m = slack.mention(channel, "U_BOB", q);
    await until(() => slack.botReplies(channel, m.ts).some((r) => r.text === `Echoed for ${q}.`), q, 30_000);
  };
  return {
    cpu: () => cpuSeconds(proc.pid),
    threads: () => cpuByThread(proc.pid),
    collections: async () => collectionsIn(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()),
    trace: (on) => command(on ? (CONTROL ? "stay" : "on") : "off"),
    async batch(n) {
      const from = asked;
      asked += n;
      for (let i = from; i < from + n; i += AT_ONCE)
        await Promise.all(Array.from({ length: Math.min(AT_ONCE, from + n - i) }, (_, k) => ask(i + k)));
      await sleep(SETTLE_MS);
    },
    stop,
  };
}

/**
 * CPU seconds of one stretch of `turns` turns, traced or not. A traced stretch ends by
 * switching tracing off, which exports what it has left and waits for the receiver's
 * answer: part of its cost. Switching tracing on happens before the stretch's CPU is
 * first read.
 */
async function stretch(bot: Bot, traced: boolean, turns: number): Promise<Stretch> {
  if (traced) {
    await bot.trace(true);
    if (!CONTROL) tracedTurns += turns;
  }
  const collected = await bot.collections();
  const threads = bot.threads();
  const before = bot.cpu();
  const started = performance.now();
  await bot.batch(turns);
  if (traced) await bot.trace(false);
  const cpu = bot.cpu() - before;
  const threadsAfter = bot.threads();
  const wallS = (performance.now() - started) / 1000;
  const after = await bot.collections();
  return {
    traced,
    cpu,
    main: threadsAfter.main - threads.main,
    others: threadsAfter.others - threads.others,
    wallS,
    majors: after.count - collected.count,
    majorMs: after.ms - collected.ms,
    minorMs: after.minorMs - collected.minorMs,
  };
}

/**
 * At each moment one process is traced and the other not: the traced one's CPU over the
 * other's, for every stretch of the run.
 */
function momentRatios(runs: Stretch[][]): number[] {
  const [a = [], b = []] = runs;
  return a.flatMap((s, k) => {
    const other = b[k]!;
    if (s.majors > 0 || other.majors > 0) return [];
    return [s.traced ? s.cpu / other.cpu : other.cpu / s.cpu];
  });
}

/**
 * A process's stretches in the pairs its order makes (untraced and traced, then traced
 * and untraced, ...: each pair one of each, side by side in time), without the pairs a
 * major collection fell in.
 */
function cleanPairs(run: Stretch[]): Array<{ on: Stretch; off: Stretch }> {
  const out: Array<{ on: Stretch; off: Stretch }> = [];
  for (let k = 0; k + 1 < run.length; k += 2) {
    const [x, y] = [run[k]!, run[k + 1]!];
    if (x.majors > 0 || y.majors > 0) continue;
    out.push(x.traced ? { on: x, off: y } : { on: y, off: x });
  }
  return out;
}

/**
 * The moments' ratios as a geometric mean with two standard errors either side: how far
 * this run's figure may be from the cost itself (the moments vary by several points).
 */
function spread(ratios: number[]): string {
  const logs = ratios.map(Math.log);
  const mean = sum(logs) / logs.length;
  const variance = sum(logs.map((x) => (x - mean) ** 2)) / Math.max(1, logs.length - 1);
  const se = Math.sqrt(variance / logs.length);
  return `${fmt(Math.exp(mean), 3)} (${fmt(Math.exp(mean - 2 * se), 3)} to ${fmt(Math.exp(mean + 2 * se), 3)})`;
}

/** How many spans of each name a traced turn made, the most frequent first. */
function spansPerTurn(receiver: OtlpReceiver, turns: number): string {
  const counts = new Map<string, number>();
  for (const s of receiver.spans) counts.set(s.name, (counts.get(s.name) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${fmt(n / Math.max(1, turns), 2)}`)
    .join(", ");
}

/** A stretch's CPU seconds and how long it took. */
type Stretch = {
  traced: boolean;
  cpu: number;
  /** The main thread's CPU seconds, and the other threads'. */
  main: number;
  others: number;
  wallS: number;
  majors: number;
  majorMs: number;
  /** The young generation's collections' pauses (scavenges), ms. */
  minorMs: number;
};

type Collections = { count: number; ms: number; minorMs: number };

/** prom-client's count and sum of the process's major collections, and sum of its minor ones, from Prometheus text. */
function collectionsIn(text: string): Collections {
  const value = (name: string, kind = "major") =>
    Number(new RegExp(`^${name}\\{kind="${kind}"\\} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);
  return {
    count: value("nodejs_gc_duration_seconds_count"),
    ms: value("nodejs_gc_duration_seconds_sum") * 1000,
    minorMs: value("nodejs_gc_duration_seconds_sum", "minor") * 1000,
  };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/**
 * Where the pairs' CPU went, both processes together: the main thread (the bot's own
 * JavaScript, and the collector's pauses) or the others (V8's compiler and collector
 * helpers, libuv's pool), untraced and traced.
 */
function threadSplit(kept: Array<Array<{ on: Stretch; off: Stretch }>>): string {
  const pairs = kept.flat();
  const perTurn = (xs: Stretch[], pick: (s: Stretch) => number) =>
    (sum(xs.map(pick)) / (xs.length * STRETCH)) * 1000;
  const offs = pairs.map((p) => p.off);
  const ons = pairs.map((p) => p.on);
  const both = (pick: (s: Stretch) => number) =>
    `${fmt(perTurn(offs, pick), 2)} / ${fmt(perTurn(ons, pick), 2)}`;
  return `${both((s) => s.main)}; ${both((s) => s.others)}`;
}

export async function run(): Promise<BenchResult> {
  const build = await buildApp();
  const llm = await LlmEmulator.start({ responder });
  const receiver = await OtlpReceiver.start();
  try {
    const script = buildSwitch(build);
    const bots = await Promise.all(["A", "B"].map((name) => startBot(build, script, llm, receiver, name)));
    try {
      // Warm-up in the same alternation, so both paths are optimized and the first export is made.
      const warmUpCpu = [0, 0];
      for (let done = 0, k = 0; done < WARM_UP; done += WARM_UP_STRETCH, k++)
        await Promise.all(
          bots.map(async (bot, b) => {
            warmUpCpu[b]! += (
              await stretch(bot, (k + b) % 2 === 0, Math.min(WARM_UP_STRETCH, WARM_UP - done))
            ).cpu;
          }),
        );
      // A goes untraced, traced, traced, untraced (so that a drift in time weighs on both
      // alike), B the other way round: at every moment one process is traced and the other not.
      const runs: Stretch[][] = [[], []];
      for (let k = 0; k < 2 * PAIRS; k++)
        await Promise.all(
          bots.map(async (bot, b) => {
            const traced = (k % 4 === 1 || k % 4 === 2) !== (b === 1);
            runs[b]!.push(await stretch(bot, traced, STRETCH));
          }),
        );
      const perTurn = (traced: boolean) =>
        runs.map(
          (r) => (sum(r.filter((s) => s.traced === traced).map((s) => s.cpu)) / (PAIRS * STRETCH)) * 1000,
        );
      const [offMs, onMs] = [perTurn(false), perTurn(true)];
      const pooled = onMs.map((on, b) => on / offMs[b]!);
      // Each process's own on / off cancels its luck, over its pairs that no major
      // collection fell in (see the top of this file); A is traced exactly when B is not,
      // so a moment that weighed on the machine raises A's ratio as much as it lowers B's,
      // and the two ratios' geometric mean cancels it.
      const kept = runs.map(cleanPairs);
      const cleanRatio = kept.map((ps) => sum(ps.map((p) => p.on.cpu)) / sum(ps.map((p) => p.off.cpu)));
      const figure = Math.sqrt(cleanRatio[0]! * cleanRatio[1]!);
      const stretchesOf = (traced: boolean) => runs.flat().filter((s) => s.traced === traced);
      const collectionsOf = (xs: Stretch[]) =>
        `${sum(xs.map((s) => s.majors))} (${fmt(sum(xs.map((s) => s.majorMs)), 0)} ms)`;
      const minorPerTurn = (traced: boolean) =>
        sum(stretchesOf(traced).map((s) => s.minorMs)) / (2 * PAIRS * STRETCH);
      const turnSpans = receiver.spans.filter((s) => s.name === "switchboard.turn").length;
      const cpus = (b: number) =>
        runs[b]!.map(
          (s) =>
            `${s.traced ? "on" : "off"} ${fmt((s.cpu / STRETCH) * 1000, 1)} (${fmt(s.wallS, 1)} s` +
            `${s.majors > 0 ? `, ${s.majors} major GC ${fmt(s.majorMs, 0)} ms` : ""})`,
        ).join(", ");
      return {
        about:
          `Tracing on against off in the same process (OTLP/HTTP, http/protobuf, to a receiver on 127.0.0.1): two processes, each ${PAIRS} traced and ${PAIRS} untraced ` +
          `stretches of ${STRETCH} tool-using turns in turn, in opposite phase, after ${WARM_UP} warm-up turns; five threads at a time; the built app on ` +
          "SQLite, Socket Mode against the Slack emulator, the LLM emulator. CPU of the bot's process from /proc." +
          (CONTROL ? " A/A run: tracing was never switched on." : ""),
        figures: {
          "CPU per turn, process A, each stretch (ms; the stretch's time)": cpus(0),
          "CPU per turn, process B, each stretch (ms; the stretch's time)": cpus(1),
          "CPU per turn, off / on, all stretches, A; B (ms)": `${fmt(offMs[0]!, 2)} / ${fmt(onMs[0]!, 2)}; ${fmt(offMs[1]!, 2)} / ${fmt(onMs[1]!, 2)}`,
          "on / off, all stretches, A; B (a major collection's cost lands on the side it falls in)": `${fmt(pooled[0]!, 3)}; ${fmt(pooled[1]!, 3)}`,
          "on / off, all stretches, the geometric mean of A's and B's": fmt(
            Math.sqrt(pooled[0]! * pooled[1]!),
            3,
          ),
          "major collections (and their pauses) in traced stretches; in untraced ones": `${collectionsOf(stretchesOf(true))}; ${collectionsOf(stretchesOf(false))}`,
          "young-generation collections' pauses per turn, traced; untraced stretches (ms)": `${fmt(minorPerTurn(true), 3)}; ${fmt(minorPerTurn(false), 3)}`,
          "pairs kept (no major collection in either stretch), A; B": `${kept[0]!.length} of ${PAIRS}; ${kept[1]!.length} of ${PAIRS}`,
          "on / off, pairs kept, A; B": `${fmt(cleanRatio[0]!, 3)}; ${fmt(cleanRatio[1]!, 3)}`,
          "on / off, pairs kept, the geometric mean of A's and B's": fmt(figure, 3),
          "CPU per turn in the pairs kept, off / on, the main thread; the other threads (ms)":
            threadSplit(kept),
          "at each moment, the traced / the untraced (both stretches without a major collection): geometric mean, and two standard errors either side":
            spread(momentRatios(runs)),
          "at each moment, the traced process / the untraced one, sorted": momentRatios(runs)
            .sort((a, b) => a - b)
            .map((x) => fmt(x, 3))
            .join(" / "),
          [`CPU of the ${WARM_UP} warm-up turns, A / B (ms)`]: `${fmt(warmUpCpu[0]! * 1000, 0)} / ${fmt(warmUpCpu[1]! * 1000, 0)}`,
          "traced turns / turn spans received / spans received": `${tracedTurns} / ${turnSpans} / ${receiver.spans.length}`,
          "spans per traced turn, by name": spansPerTurn(receiver, tracedTurns),
        },
        checks: [
          atMost(
            "tracing on / off, CPU per turn (geometric mean of the two processes', pairs without a major collection)",
            figure,
            TARGET_RATIO,
            "×",
          ),
          atMost(
            "traced turns without a turn span, or turn spans of untraced turns",
            Math.abs(tracedTurns - turnSpans),
            0,
            "",
          ),
        ],
      };
    } finally {
      await Promise.all(bots.map((b) => b.stop()));
    }
  } finally {
    await killAll();
    await receiver.close();
    await llm.close();
    build.remove();
  }
}
