import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import {
  CHAT_MODEL,
  kindOf,
  MemoryHarness,
  receivedMessages,
  receivedTokens,
} from "../test/e2e/memory.harness.js";
import type { RecordedRequest, ScriptedTurn } from "../test/emulators/llm/index.js";
import { lastUserText, trailingToolResults } from "../test/emulators/llm/script.js";
import { atMost, type BenchResult } from "./support/report.js";

/**
 * One 200-turn thread through the real Agent, OpenAI provider, LLM emulator and sqlite
 * store, once with compression and once without; each turn is followed by the after-turn
 * title and compression as the runtime runs them (MemoryHarness.turn). A small context
 * window makes the figures show within 200 turns; they scale with the window.
 * Targets: the prompt at turn 200 <= 1.2 x the prompt at turn 20 (10-turn means, so the
 * saw-tooth of compression cycles evens out), and bytes written per turn flat: turns
 * 191-200 <= 1.2 x turns 11-20, with compression.
 */
const TURNS = 200;
const POINTS = [10, 20, 50, 100, 200];
const WINDOW = { contextWindow: 8_000, maxOutputTokens: 1_000 };
const COMPRESS_AT = 0.4;
const KEEP = 6;

/** Targets: turn-200 prompt over turn-20 prompt, and late bytes per turn over early ones. */
const MAX_PROMPT_GROWTH = 1.2;
const MAX_BYTES_GROWTH = 1.2;

/** When the last summary request arrived (performance.now()), to time compressions. */
let summaryAskedAt: number | undefined;

const WORDS = "release plan ticket build deploy review branch merge test fix owner date risk note".split(" ");

/** Deterministic text of about `n` words, different per seed. */
function prose(seed: number, n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++)
    out.push(WORDS[(seed * 7 + i * 13 + ((i * seed) % 5)) % WORDS.length] as string);
  return `${out.join(" ")}.`;
}

/** Answers of 80-200 words, a tool call every fifth turn, summaries of about 120 words. */
function benchModel(req: RecordedRequest): ScriptedTurn {
  const kind = kindOf(req);
  if (kind === "title") return { text: "Release planning", chunkSize: 1_000 };
  if (kind === "summary") {
    summaryAskedAt = performance.now();
    return { text: `- Summary: ${prose(req.messages.length, 120)}`, chunkSize: 1_000 };
  }
  const results = trailingToolResults(req);
  if (results !== undefined) return { text: `From the tool: ${prose(results.length, 60)}`, chunkSize: 1_000 };
  const n = Number(lastUserText(req).match(/Turn (\d+)/)?.[1] ?? 0);
  if (n % 5 === 0) return { toolCalls: [{ name: "util__echo", arguments: { text: prose(n, 150) } }] };
  return { text: `Answer ${n}: ${prose(n, 80 + ((n * 37) % 120))}`, chunkSize: 1_000 };
}

interface TurnFigures {
  promptTokens: number;
  omitted: number;
  bytes: number;
  compressionMs?: number;
}

async function conversation(compression: boolean): Promise<TurnFigures[]> {
  const h = await MemoryHarness.start(
    {
      modelSettings: { [CHAT_MODEL]: WINDOW },
      // Compression off: nothing may be folded, so the budget alone keeps prompts in the window.
      memory: { compressAt: COMPRESS_AT, keepMessages: compression ? KEEP : 1_000_000 },
    },
    benchModel,
  );
  const figures: TurnFigures[] = [];
  try {
    for (let i = 1; i <= TURNS; i++) {
      const first = h.emu.requests.length;
      const bytes = h.sessions.bytesWritten;
      const chunks = h.session.archiveChunks;
      const history = h.session.messages.length;
      summaryAskedAt = undefined;
      await h.turn(`Turn ${i}: ${prose(i + 1_000, 15 + (i % 20))}`, { channel: "bench" });
      const afterTurnMs = summaryAskedAt === undefined ? undefined : performance.now() - summaryAskedAt;
      const req = h.emu.requests[first] as RecordedRequest;
      figures.push({
        promptTokens: receivedTokens(req),
        omitted: history - (receivedMessages(req).length - 1),
        bytes: h.sessions.bytesWritten - bytes,
        compressionMs: h.session.archiveChunks > chunks ? afterTurnMs : undefined,
      });
    }
  } finally {
    await h.close();
  }
  return figures;
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
const round = (x: number, digits = 0) => Number(x.toFixed(digits));
const at = (f: TurnFigures[], turn: number) => f[turn - 1] as TurnFigures;
/** Turns `turn-9 .. turn`: one compression cycle is about that long, so this evens out the saw-tooth. */
const window10 = (f: TurnFigures[], turn: number) => f.slice(Math.max(0, turn - 10), turn);

export async function run(): Promise<BenchResult> {
  const on = await conversation(true);
  const off = await conversation(false);
  const out: Record<string, number | string> = {
    settings: `context window ${WINDOW.contextWindow}, output reserve ${WINDOW.maxOutputTokens}, compressAt ${COMPRESS_AT}, keepMessages ${KEEP}, ${TURNS} turns, tool call every 5th turn`,
  };
  for (const p of POINTS) {
    out[`prompt tokens turn ${p}, on`] = at(on, p).promptTokens;
    out[`prompt tokens turn ${p}, off`] = at(off, p).promptTokens;
  }
  for (const p of POINTS) {
    out[`prompt tokens mean of turns ${p - 9}-${p}, on`] = round(
      mean(window10(on, p).map((f) => f.promptTokens)),
    );
  }
  out["prompt tokens max over all turns, on"] = Math.max(...on.map((f) => f.promptTokens));
  out["turn 200 / turn 20, on"] = round(at(on, 200).promptTokens / at(on, 20).promptTokens, 2);
  out["turn 200 / turn 20 (10-turn means), on"] = round(
    mean(window10(on, 200).map((f) => f.promptTokens)) / mean(window10(on, 20).map((f) => f.promptTokens)),
    2,
  );
  out["messages left out of the prompt at turn 200, on"] = at(on, 200).omitted;
  out["messages left out of the prompt at turn 200, off"] = at(off, 200).omitted;
  for (const p of POINTS) {
    out[`bytes written turn ${p}, on`] = at(on, p).bytes;
    out[`bytes written turn ${p}, off`] = at(off, p).bytes;
  }
  for (const p of POINTS) {
    out[`bytes written per turn, mean of turns ${p - 9}-${p}, on`] = round(
      mean(window10(on, p).map((f) => f.bytes)),
    );
  }
  const ms = on.flatMap((f) => (f.compressionMs === undefined ? [] : [f.compressionMs]));
  out.compressions = ms.length;
  out["ms per compression, mean (emulated model)"] = round(mean(ms), 1);
  out["ms per compression, max (emulated model)"] = round(Math.max(0, ...ms), 1);
  const promptGrowth =
    mean(window10(on, 200).map((f) => f.promptTokens)) / mean(window10(on, 20).map((f) => f.promptTokens));
  const bytesGrowth =
    mean(window10(on, 200).map((f) => f.bytes)) / mean(window10(on, 20).map((f) => f.bytes));
  return {
    about:
      "One thread of 200 turns through the real Agent, OpenAI provider, LLM emulator and SQLite store, each " +
      "turn followed by the after-turn title and compression as the runtime runs them; once with compression " +
      "and once without (nothing folded). Prompt tokens as the emulator received them; bytes as the session " +
      "repository wrote them (session, archive records).",
    figures: out,
    checks: [
      atMost(
        "Memory: prompt tokens, turns 191-200 / turns 11-20 (10-turn means), with compression",
        promptGrowth,
        MAX_PROMPT_GROWTH,
        "x",
      ),
      atMost(
        "Memory: prompt tokens, turn 200 / turn 20, with compression",
        at(on, 200).promptTokens / at(on, 20).promptTokens,
        MAX_PROMPT_GROWTH,
        "x",
      ),
      atMost(
        "Memory: bytes written per turn, turns 191-200 / turns 11-20 (10-turn means), with compression",
        bytesGrowth,
        MAX_BYTES_GROWTH,
        "x",
        "bytes per save flat",
      ),
    ],
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await run();
  for (const [k, v] of Object.entries(result.figures ?? {})) console.log(`${k}: ${v}`);
  for (const c of result.checks)
    console.log(`${c.ok ? "ok" : "MISSED"} ${c.name}: ${c.value} ${c.op} ${c.target}`);
  process.exit(result.checks.every((c) => c.ok) ? 0 : 1);
}
