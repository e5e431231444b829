/**
 * The agent's own cost per turn: the real core (buildCore: dispatcher, turn runtime, agent,
 * OpenAI provider, MCP hub with the "everything" server over stdio, SQLite store) driven
 * through `dispatcher.handle`, answered by the LLM emulator with a realistic answer (about
 * 400 tokens streamed a token or so per chunk) and, every other turn, one tool call through
 * the real MCP server first. The reply is a null one, so no platform costs anything.
 * Overhead per turn = wall time of the turn - time waiting for the model's next event -
 * time inside hub.call. Also: the store writes each turn makes.
 * Run alone: `npm run bench -- agent`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Provider } from "../src/agent/providers/provider.js";
import { buildCore } from "../src/app.js";
import type { Reply } from "../src/runtime/contract.js";
import { LlmEmulator, type RecordedRequest, type ScriptedTurn } from "../test/emulators/llm/index.js";
import { everythingMcp } from "../test/support/chat-process.js";
import { lastUserText, toolResultsSinceUser } from "../test/support/llm-text.js";
import { kindOf, prose } from "./support/llm.js";
import { atMost, type BenchResult, fmt } from "./support/report.js";
import { mean, p50, p90 } from "./support/stats.js";

const TURNS = Number(process.env.BENCH_AGENT_TURNS ?? 100);
const WARMUP = 4;
/** The agent's own time per turn, text-only and with a tool call (ms, on this machine). */
const TARGET_OVERHEAD_MS = 15;

/** ~400 tokens. */
const ANSWER = `Here is what I found. ${prose(300)}`;
const TOOL_ANSWER = `The echo came back. ${prose(290)}`;

function model(req: RecordedRequest): ScriptedTurn {
  if (kindOf(req) !== "chat") return { text: "Build 731 memory limit", chunkSize: 100 };
  const asked = lastUserText(req);
  const results = toolResultsSinceUser(req).length;
  if (asked.includes("[tool]") && results === 0) {
    return { toolCalls: [{ name: "everything__echo", arguments: { message: `echo ${asked.slice(-40)}` } }] };
  }
  // One token is about 4 characters: one chunk a token, as OpenAI streams.
  return { text: results > 0 ? TOOL_ANSWER : ANSWER, chunkSize: 4 };
}

/** A reply that discards what it is given, so the platform costs nothing. */
function nullReply(): Reply {
  return {
    status: async () => undefined,
    stream: () => ({ write: () => undefined, finish: async () => undefined, fail: async () => undefined }),
    upload: async () => undefined,
    title: async () => undefined,
    notice: async () => undefined,
  };
}

/** Counts the time spent waiting for the provider's next event (chat requests only). */
function timed(inner: Provider, clock: { ms: number }): Provider {
  return {
    name: inner.name,
    listModels: (s) => inner.listModels(s),
    async *stream(req, signal) {
      const chat = !req.system.startsWith("You name chat threads") && !req.system.startsWith("You keep");
      const it = inner.stream(req, signal)[Symbol.asyncIterator]();
      for (;;) {
        const t = performance.now();
        const next = await it.next();
        if (chat) clock.ms += performance.now() - t;
        if (next.done) return;
        yield next.value;
      }
    },
  };
}

interface TurnFigures {
  tool: boolean;
  wallMs: number;
  modelMs: number;
  toolMs: number;
  saves: number;
  bytes: number;
  storeWrites: number;
}

export async function run(): Promise<BenchResult> {
  const llm = await LlmEmulator.start({ responder: model });
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-agent-"));
  // No compression in a 100-turn thread: this measures turns, not summaries.
  writeFileSync(join(dir, "switchboard.yaml"), "memory:\n  compressAt: 0.95\nhealth:\n  enabled: false\n");
  writeFileSync(join(dir, "mcp.json"), JSON.stringify(everythingMcp));
  const clock = { ms: 0 };
  const core = await buildCore({
    env: {
      OPENAI_API_KEY: "sk-bench",
      OPENAI_BASE_URL: llm.openaiBaseUrl,
      SWITCHBOARD_CONFIG: join(dir, "switchboard.yaml"),
      MCP_CONFIG: join(dir, "mcp.json"),
      STORE_URL: `sqlite://${join(dir, "s.sqlite")}`,
    },
    cwd: dir,
    wrapProvider: (p) => timed(p, clock),
  });
  const tools = { ms: 0 };
  const hubCall = core.hub.call.bind(core.hub);
  core.hub.call = async (...args: Parameters<typeof hubCall>) => {
    const t = performance.now();
    try {
      return await hubCall(...args);
    } finally {
      tools.ms += performance.now() - t;
    }
  };
  const counts = { saves: 0, writes: 0 };
  const save = core.sessions.save.bind(core.sessions);
  core.sessions.save = (...args) => {
    counts.saves++;
    return save(...args);
  };
  // A turn's session is written under its lease, in one conditional statement instead of
  // keyv's set: counted here as the one write it is, so the figure still counts the same writes.
  const sql = core.store.sql;
  if (sql) {
    const query = sql.query.bind(sql);
    sql.query = (text, params) => {
      if (/^\s*INSERT/.test(text) && String(params[0]).endsWith(":session:console:bench-agent"))
        counts.writes++;
      return query(text, params);
    };
  }
  const kv = core.store.kv;
  const set = kv.set.bind(kv);
  const del = kv.delete.bind(kv);
  kv.set = ((...args: Parameters<typeof set>) => {
    counts.writes++;
    return set(...args);
  }) as typeof kv.set;
  kv.delete = ((...args: Parameters<typeof del>) => {
    counts.writes++;
    return del(...args);
  }) as typeof kv.delete;

  const figures: TurnFigures[] = [];
  try {
    for (let i = 0; i < TURNS + WARMUP; i++) {
      const tool = i % 2 === 1;
      const before = { model: clock.ms, tool: tools.ms, ...counts, bytes: core.sessions.bytesWritten };
      const started = performance.now();
      await core.dispatcher.handle({
        id: `bench-${i}`,
        key: "console:bench-agent",
        platform: "console",
        channel: "bench",
        user: { id: "u1", name: "ana" },
        text: `message ${i}${tool ? " [tool]" : ""}: what happened to build 731?`,
        attachments: [],
        reply: nullReply(),
      });
      const wallMs = performance.now() - started;
      if (i < WARMUP) continue;
      figures.push({
        tool,
        wallMs,
        modelMs: clock.ms - before.model,
        toolMs: tools.ms - before.tool,
        saves: counts.saves - before.saves,
        bytes: core.sessions.bytesWritten - before.bytes,
        storeWrites: counts.writes - before.writes,
      });
    }
  } finally {
    await core.close();
    await llm.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const overhead = (f: TurnFigures) => f.wallMs - f.modelMs - f.toolMs;
  const text = figures.filter((f) => !f.tool);
  const withTool = figures.filter((f) => f.tool);
  const row = (fs: TurnFigures[], pick: (f: TurnFigures) => number, digits = 2) =>
    `${fmt(mean(fs.map(pick)), digits)} / ${fmt(p50(fs.map(pick)), digits)} / ${fmt(p90(fs.map(pick)), digits)}`;
  const textOverhead = p50(text.map(overhead));
  const toolOverhead = p50(withTool.map(overhead));
  return {
    about:
      `${TURNS} turns in one thread after ${WARMUP} warm-up turns, alternating a text answer (${ANSWER.length} ` +
      `characters, ~${Math.round(ANSWER.length / 4)} tokens, streamed 4 characters a chunk) and a turn that first ` +
      "calls everything__echo through the MCP hub (stdio), then answers as long. Real dispatcher (dedupe, lock, " +
      "turn record), agent, OpenAI provider and SQLite store; a null reply. The model's time is the time spent " +
      "waiting for the provider's next event (the OpenAI SDK's parsing counts as the model's); the tool's is " +
      "the time inside hub.call. Figures are mean / p50 / p90 per turn.",
    tables: [
      {
        columns: ["per turn (mean / p50 / p90)", "text answer", "with one tool call"],
        rows: [
          ["wall time, ms", row(text, (f) => f.wallMs), row(withTool, (f) => f.wallMs)],
          ["waiting for the model, ms", row(text, (f) => f.modelMs), row(withTool, (f) => f.modelMs)],
          ["inside the tool call, ms", row(text, (f) => f.toolMs), row(withTool, (f) => f.toolMs)],
          ["agent + runtime overhead, ms", row(text, overhead), row(withTool, overhead)],
          ["session saves", row(text, (f) => f.saves, 1), row(withTool, (f) => f.saves, 1)],
          ["session bytes written", row(text, (f) => f.bytes, 0), row(withTool, (f) => f.bytes, 0)],
          [
            "store writes (keyv set/delete: session, turn record)",
            row(text, (f) => f.storeWrites, 1),
            row(withTool, (f) => f.storeWrites, 1),
          ],
        ],
      },
    ],
    checks: [
      atMost("Agent: overhead per text turn, p50", textOverhead, TARGET_OVERHEAD_MS, "ms"),
      atMost("Agent: overhead per turn with a tool call, p50", toolOverhead, TARGET_OVERHEAD_MS, "ms"),
    ],
  };
}
