/**
 * One platform's benchmark: the real Switchboard app and the naive bot, each on its own
 * emulator of the platform (default limits, real time), the same LLM emulator and answers,
 * measured with the same scenarios in the same run. Targets for single conversations fail
 * the run; the crowd's figures are tracked without a target yet (issue 11 builds the
 * write scheduler they need).
 */
import type { Arena } from "./arena.js";
import { AFTER_TURN_MS, ANSWER, type BenchModel, CHUNK_CHARS, CHUNK_DELAY_MS, startModel } from "./llm.js";
import { NAIVE_EDIT_EVERY_MS } from "./naive.js";
import { atLeast, atMost, type BenchResult, type Check, fmt, ratio, type Table } from "./report.js";
import {
  busyThread,
  type Crowd,
  conversations,
  crowd,
  FOLLOW_UPS,
  type Meanwhile,
  THREADS_PER_CHANNEL,
  type Turn,
  toolAnswers,
} from "./scenarios.js";
import { max, p50, sum } from "./stats.js";

/** Conversations per bot (each one a first mention and, for Switchboard, FOLLOW_UPS follow-ups). */
export const RUNS = Number(process.env.BENCH_RUNS ?? 10);
/** Threads at once in the crowd; BENCH_THREADS=200 for the big one. */
export const THREADS = Number(process.env.BENCH_THREADS ?? 25);
export const TOOL_RUNS = Number(process.env.BENCH_TOOL_RUNS ?? 3);

/** The targets, in one place (ms). */
export const TARGETS = {
  /** First visible: Switchboard p50 <= FIRST_FACTOR x naive p50 + FIRST_SLACK_MS. */
  FIRST_FACTOR: 2,
  FIRST_SLACK_MS: 50,
  /** A follow-up's first visible p50 within this of the first mention's p50 (issue 10). */
  FOLLOW_UP_SLACK_MS: 50,
  /** Final text p50 <= naive p50 + this. */
  FINAL_SLACK_MS: 1_500,
  /**
   * Whether a message added to a thread while its first answer streams must be answered
   * (DESIGN: never drop a message because its thread is busy). The thread is known from
   * its first turn's start (its turn record), so this is a target.
   */
  GATE_BUSY_THREAD: true,
};

export interface PlatformSpec {
  name: string;
  switchboard(model: BenchModel): Promise<Arena>;
  naive(model: BenchModel): Promise<Arena>;
  /** How Switchboard writes here, for the text. */
  writesHow: string;
}

const ms = (x: number) => (Number.isFinite(x) ? `${fmt(x)} ms` : "n/a");
const s = (x: number) => (Number.isFinite(x) ? `${(x / 1000).toFixed(2)} s` : "n/a");
const firsts = (ts: Turn[]) => ts.map((t) => t.first).filter(Number.isFinite);
const finals = (ts: Turn[]) => ts.filter((t) => t.complete).map((t) => t.final);
const tails = (ts: Turn[]) => ts.map((t) => t.tail).filter(Number.isFinite);
const incomplete = (ts: Turn[]) => ts.filter((t) => !t.complete).length;

function crowdRows(sb: Crowd, nv: Crowd): Array<Array<string | number>> {
  const row = (name: string, a: number, b: number, show: (x: number) => string) => [
    name,
    show(a),
    show(b),
    ratio(a, b),
  ];
  const writes = (c: Crowd) => sum(c.turns.map((t) => t.writes));
  const other = (c: Crowd) => sum(c.turns.map((t) => t.other));
  return [
    row("first visible, p50", p50(firsts(sb.turns)), p50(firsts(nv.turns)), ms),
    row("first visible, max", max(firsts(sb.turns)), max(firsts(nv.turns)), ms),
    row("final text complete, p50", p50(finals(sb.turns)), p50(finals(nv.turns)), s),
    row("all answers complete (last one)", sb.allDoneMs, nv.allDoneMs, s),
    row("message writes, total", writes(sb), writes(nv), String),
    row("message writes per answer", writes(sb) / sb.threads, writes(nv) / nv.threads, (x) => x.toFixed(1)),
    row("other writes (reactions, status, threads, typing), total", other(sb), other(nv), String),
    [
      "429s answered",
      `${sb.limited.total} (${sb.limited.byKind})`,
      `${nv.limited.total} (${nv.limited.byKind})`,
      ratio(sb.limited.total, nv.limited.total),
    ],
    [
      "answers complete",
      `${sb.threads - incomplete(sb.turns)} of ${sb.threads}`,
      `${nv.threads - incomplete(nv.turns)} of ${nv.threads}`,
      "",
    ],
  ];
}

export async function platformBench(spec: PlatformSpec): Promise<BenchResult> {
  const model = await startModel();
  const sbArena = await spec.switchboard(model);
  const nvArena = await spec.naive(model);
  try {
    const log = (what: string) => process.stderr.write(`  ${spec.name}: ${what}\n`);
    log(`Switchboard, ${RUNS} conversations of ${FOLLOW_UPS + 1} turns`);
    const sbMark = sbArena.watch.limited().length;
    const sb = await conversations(sbArena, model, RUNS, true);
    log(`naive, ${RUNS} first mentions`);
    const nvMark = nvArena.watch.limited().length;
    const nv = await conversations(nvArena, model, RUNS, false);
    log(`tool answers x${TOOL_RUNS}`);
    const sbTool = await toolAnswers(sbArena, TOOL_RUNS);
    const nvTool = await toolAnswers(nvArena, TOOL_RUNS);
    log(`a message added while the first answer streams x${TOOL_RUNS}`);
    const busy = await busyThread(sbArena, TOOL_RUNS);
    const sbSingle429 = sbArena.watch.limitedSince(sbMark);
    const nvSingle429 = nvArena.watch.limitedSince(nvMark);
    log(`crowd of ${THREADS} threads, Switchboard`);
    const crowdTimeout = 60_000 + THREADS * 8_000;
    sbArena.quiet?.();
    const sbCrowd = await crowd(sbArena, THREADS, crowdTimeout);
    log(`crowd of ${THREADS} threads, naive`);
    nvArena.quiet?.();
    const nvCrowd = await crowd(nvArena, THREADS, crowdTimeout);

    const sbAll = [...sb.firstMention, ...sb.followUps, ...sbTool, ...busy.map((b) => b.first)];
    const busyAnswered = busy.filter((b) => b.second.complete).length;
    const sbTurns = [...sb.firstMention, ...sb.followUps];
    const nvAll = [...nv.firstMention, ...nvTool];
    const first = { sb: p50(firsts(sb.firstMention)), nv: p50(firsts(nv.firstMention)) };
    const during = (m: Meanwhile[]) => sb.followUps.filter((f) => m.includes(f.meanwhile));
    const withTitle = during(["title", "title and compression"]);
    const withCompression = during(["compression", "title and compression"]);
    const withNothing = during(["nothing"]);
    const final = { sb: p50(finals(sb.firstMention)), nv: p50(finals(nv.firstMention)) };
    const finalTool = { sb: p50(finals(sbTool)), nv: p50(finals(nvTool)) };
    const writes = {
      sb: p50(sb.firstMention.map((t) => t.writes)),
      nv: p50(nv.firstMention.map((t) => t.writes)),
    };
    const toolWrites = { sb: p50(sbTool.map((t) => t.writes)), nv: p50(nvTool.map((t) => t.writes)) };

    const single: Table = {
      title: "One conversation at a time",
      columns: ["measure", "Switchboard", "naive", "Switchboard / naive"],
      rows: [
        ["first mention -> first bot message, p50", ms(first.sb), ms(first.nv), ratio(first.sb, first.nv)],
        [
          "first mention -> first bot message, max",
          ms(max(firsts(sb.firstMention))),
          ms(max(firsts(nv.firstMention))),
          "",
        ],
        [
          `follow-up -> first bot message while the previous turn's title is made, p50 (n = ${withTitle.length})`,
          ms(p50(firsts(withTitle))),
          "(does not follow threads)",
          "",
        ],
        [
          `follow-up -> first bot message while the previous turn's compression runs, p50 (n = ${withCompression.length})`,
          ms(p50(firsts(withCompression))),
          "",
          "",
        ],
        [
          `follow-up -> first bot message with nothing running, p50 (n = ${withNothing.length})`,
          ms(p50(firsts(withNothing))),
          "",
          "",
        ],
        [
          "answer complete on the platform -> turn over (thread free for a follow-up), p50 / max",
          `${ms(p50(tails(sbTurns)))} / ${ms(max(tails(sbTurns)))}`,
          "",
          "",
        ],
        [
          "a message added to the thread while its first answer streams (2 s in): answered in full",
          `${busyAnswered} of ${busy.length}`,
          "",
          "",
        ],
        ["first mention -> final text complete, p50", s(final.sb), s(final.nv), ratio(final.sb, final.nv)],
        [
          "first mention -> final text complete, with one tool call, p50",
          s(finalTool.sb),
          s(finalTool.nv),
          ratio(finalTool.sb, finalTool.nv),
        ],
        ["message writes per answer, p50", writes.sb, writes.nv, ratio(writes.sb, writes.nv)],
        [
          "message writes per answer with a tool call, p50",
          toolWrites.sb,
          toolWrites.nv,
          ratio(toolWrites.sb, toolWrites.nv),
        ],
        [
          "429s during these conversations",
          `${sbSingle429.total} (${sbSingle429.byKind})`,
          `${nvSingle429.total} (${nvSingle429.byKind})`,
          "",
        ],
        [
          "answers complete",
          `${sbAll.length - incomplete(sbAll)} of ${sbAll.length}`,
          `${nvAll.length - incomplete(nvAll)} of ${nvAll.length}`,
          "",
        ],
      ],
    };
    const crowdTable: Table = {
      title: `${THREADS} threads at once (${THREADS_PER_CHANNEL} to a channel): tracked, no target yet (issue 11)`,
      columns: ["measure", "Switchboard", "naive", "Switchboard / naive"],
      rows: crowdRows(sbCrowd, nvCrowd),
    };

    const checks: Check[] = [
      atMost(
        `${spec.name}: first visible p50, first mention`,
        first.sb,
        TARGETS.FIRST_FACTOR * first.nv + TARGETS.FIRST_SLACK_MS,
        "ms",
        `${TARGETS.FIRST_FACTOR} x naive ${fmt(first.nv)} ms + ${TARGETS.FIRST_SLACK_MS} ms`,
      ),
      atMost(
        `${spec.name}: first visible p50, follow-up while the title is made`,
        p50(firsts(withTitle)),
        first.sb + TARGETS.FOLLOW_UP_SLACK_MS,
        "ms",
        `first mention p50 ${fmt(first.sb)} ms + ${TARGETS.FOLLOW_UP_SLACK_MS} ms`,
      ),
      atMost(
        `${spec.name}: first visible p50, follow-up while compression runs`,
        p50(firsts(withCompression)),
        first.sb + TARGETS.FOLLOW_UP_SLACK_MS,
        "ms",
        `first mention p50 ${fmt(first.sb)} ms + ${TARGETS.FOLLOW_UP_SLACK_MS} ms`,
      ),
      atLeast(
        `${spec.name}: follow-ups measured while a title was made`,
        withTitle.length,
        Math.ceil(RUNS / 2),
        "follow-ups",
        "half the conversations: otherwise the figure does not show what it claims",
      ),
      atLeast(
        `${spec.name}: follow-ups measured while a compression ran`,
        withCompression.length,
        Math.ceil(RUNS / 2),
        "follow-ups",
        "half the conversations: otherwise the figure does not show what it claims",
      ),
      atMost(
        `${spec.name}: final text p50, one answer`,
        final.sb,
        final.nv + TARGETS.FINAL_SLACK_MS,
        "ms",
        `naive ${fmt(final.nv)} ms + ${TARGETS.FINAL_SLACK_MS} ms`,
      ),
      atMost(
        `${spec.name}: final text p50, one answer with a tool call`,
        finalTool.sb,
        finalTool.nv + TARGETS.FINAL_SLACK_MS,
        "ms",
        `naive ${fmt(finalTool.nv)} ms + ${TARGETS.FINAL_SLACK_MS} ms`,
      ),
      atMost(
        `${spec.name}: lost or incomplete answers, one conversation at a time`,
        incomplete(sbAll),
        0,
        "answers",
      ),
      atMost(
        `${spec.name}: lost or incomplete answers, ${THREADS} threads at once`,
        incomplete(sbCrowd.turns),
        0,
        "answers",
        "text is never dropped",
      ),
    ];
    const busyCheck = atLeast(
      `${spec.name}: messages added to a busy thread that got their answer`,
      busyAnswered,
      busy.length,
      "answers",
      "never drop a message because its thread is busy",
    );
    const notes = [
      `${THREADS}-thread figures: tracked, no target yet (issue 11); only "text is never dropped" is gated.`,
      "Answer complete -> turn over: tracked, no target yet. A message sent in that window is queued behind " +
        "the turn, or, in a thread's first turn, not answered at all (the thread is not known before the turn " +
        "has stored its session).",
    ];
    if (TARGETS.GATE_BUSY_THREAD) checks.push(busyCheck);
    else if (!busyCheck.ok) {
      notes.push(
        `Not gated yet (TARGETS.GATE_BUSY_THREAD): ${busy.length - busyAnswered} of ${busy.length} messages ` +
          "added to a thread while its first answer streamed got no answer at all.",
      );
    }
    return {
      about:
        `The real app (startApp: ${spec.writesHow}; SQLite store, the "everything" MCP server over stdio, ` +
        `the OpenAI provider) and a naive bot (raw SDK calls: first text posted as it arrives, an edit every ` +
        `${NAIVE_EDIT_EVERY_MS / 1000} s, a final edit, retries only on 429) each on its own ${spec.name} emulator ` +
        `with the platform's limits at real speed, answered by the same LLM emulator: ${ANSWER.split(" ").length} ` +
        `words (${ANSWER.length} characters) in chunks of ${CHUNK_CHARS} characters every ${CHUNK_DELAY_MS} ms ` +
        `(~${((ANSWER.length / CHUNK_CHARS) * CHUNK_DELAY_MS) / 1000} s); titles and summaries take the model ` +
        `${AFTER_TURN_MS / 1000} s. Compression is set to start at 300 tokens (keepMessages 2), so a thread's ` +
        `turns from the second on are followed by a compression (unless the previous after-turn job is still ` +
        `pending). Clocks start when the person's message is sent to the ` +
        `emulator and stop at the write the emulator answered: the first bot message in the thread, or the ` +
        `write that made the answer's text complete. Each conversation is a first mention and ${FOLLOW_UPS} ` +
        `follow-ups, each sent the moment Switchboard is done with the turn before it (answer complete, turn ` +
        `over: its session stored and its turn record ended), and classed by what the model was doing for the ` +
        `thread when the follow-up's first message appeared. ` +
        `${RUNS} conversations per bot, ${TOOL_RUNS} answers with ` +
        `a tool call (everything's echo), one bot at a time, everything in one Node process.`,
      tables: [single, crowdTable],
      checks,
      notes,
    };
  } finally {
    await sbArena.stop();
    await nvArena.stop();
    await model.close();
  }
}
