/**
 * Large catalogs: ten MCP servers of twenty tools each (real SDK servers over stdio, see
 * `catalogServers`), the real app on Slack (Socket Mode against the emulator), SQLite, the
 * LLM emulator with a scripted model that calls the right tool when it is offered and
 * searches for it when it is not. Each question is a mention in a channel of its own.
 * The same questions run twice in the same run: with the whole catalog in every request
 * (the budget raised out of reach: the baseline), then with the default tool budget
 * (40 tools, 15 % of the window). Prompt tokens are the LLM emulator's count of each
 * request (tools included), summed over a turn's model requests.
 * Run alone: `npm run bench -- catalog` (BENCH_CATALOG_ROUNDS: times each question is asked, default 2).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { countTokens } from "../src/agent/context.js";
import { SEARCH_TOOL } from "../src/agent/tool-offer.js";
import { type App, startApp } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { catalogServers } from "../src/mcp/testkit.js";
import { LlmEmulator, type RecordedRequest } from "../test/emulators/llm/index.js";
import { SlackEmulator } from "../test/emulators/slack/index.js";
import { appEnv } from "../test/support/app-env.js";
import { CATALOG_ASKS, catalogModel, isRouterRequest, ranRightTool } from "../test/support/catalog-model.js";
import { isTitleRequest } from "../test/support/llm-text.js";
import { until } from "./support/replicas.js";
import { atLeast, atMost, type BenchResult, fmt, ratio } from "./support/report.js";
import { max, mean, p50 } from "./support/stats.js";

const ROUNDS = Number(process.env.BENCH_CATALOG_ROUNDS ?? 2);
/** gpt-4o-mini, the model the app is given here. */
const WINDOW = 128_000;

interface Turn {
  promptTokens: number;
  /** The router's share of promptTokens (a small model's tokens). */
  routerTokens: number;
  requests: number;
  toolsPerRequest: number[];
  toolTokensPerRequest: number[];
  searched: boolean;
  right: boolean;
  ms: number;
}

const wireTokens = (req: RecordedRequest) =>
  (Array.isArray(req.body.tools) ? req.body.tools : []).reduce(
    (n: number, t: unknown) => n + countTokens(JSON.stringify(t)),
    0,
  );

async function turns(yaml: string): Promise<Turn[]> {
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-catalog-"));
  // Every tool runs without asking: approvals are measured in approvals.bench.ts.
  const approvals = 'approvals:\n  rules:\n    - server: "*"\n      mode: always\n';
  writeFileSync(
    join(dir, "switchboard.yaml"),
    `llm:\n  maxRetries: 0\nhealth:\n  enabled: false\n${approvals}${yaml}`,
  );
  writeFileSync(join(dir, "mcp.json"), JSON.stringify({ mcpServers: catalogServers(dir) }));
  const llm = await LlmEmulator.start({ responder: catalogModel });
  const slack = await SlackEmulator.start();
  let app: App | undefined;
  const out: Turn[] = [];
  try {
    app = await startApp({ env: appEnv({ dir, llm, slack }), cwd: dir });
    if (app.hub.tools().length !== 200) throw new Error(`expected 200 tools, got ${app.hub.tools().length}`);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, ask] of CATALOG_ASKS.entries()) {
        const channel = `CB${round}x${i}`;
        slack.state.addChannel(channel, `catalog-${round}-${i}`);
        llm.requests.length = 0;
        const started = Date.now();
        const m = slack.mention(channel, "U_ALICE", ask.text);
        const reply = await until(
          () => slack.botReplies(channel, m.ts).find((r) => /^(Done|No )/.test(r.text)),
          `the answer to "${ask.text}"`,
        );
        const ms = Date.now() - started;
        await app.dispatcher.settled();
        const asked = llm.requests.filter((r) => !isTitleRequest(r));
        out.push({
          promptTokens: asked.reduce((n, r) => n + (r.promptTokens ?? 0), 0),
          routerTokens: asked.filter(isRouterRequest).reduce((n, r) => n + (r.promptTokens ?? 0), 0),
          requests: asked.length,
          toolsPerRequest: asked.map((r) => r.toolNames.length),
          toolTokensPerRequest: asked.map(wireTokens),
          searched: asked.some((r) => JSON.stringify(r.messages).includes(SEARCH_TOOL)),
          right: ranRightTool(reply.text, ask),
          ms,
        });
      }
    }
  } finally {
    await app?.stop();
    await slack.stop();
    await llm.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

export async function run(): Promise<BenchResult> {
  const whole = await turns("agent:\n  toolBudget:\n    maxTools: 100000\n    windowShare: 1\n");
  const budgeted = await turns("");
  // The router's own requests count in the turn: its prompt tokens are part of the cost.
  const routed = await turns("agent:\n  toolRouter:\n    model: small-router-model\n");
  const defaults = loadConfig({ OPENAI_API_KEY: "x" }, tmpdir()).config.agent.toolBudget;
  const tokenBudget = Math.floor(defaults.windowShare * WINDOW);
  const prompt = (ts: Turn[]) => mean(ts.map((t) => t.promptTokens));
  const perRequest = (ts: Turn[], f: (t: Turn) => number[]) => ts.flatMap(f);
  const right = (ts: Turn[]) => ts.filter((t) => t.right).length;
  const row = (name: string, f: (ts: Turn[]) => number, unit = "") => {
    const [a, b, c] = [f(budgeted), f(whole), f(routed)];
    return [name, `${fmt(a)}${unit}`, `${fmt(c)}${unit}`, `${fmt(b)}${unit}`, ratio(a, b), ratio(c, b)];
  };
  return {
    about:
      `${CATALOG_ASKS.length} questions × ${ROUNDS} rounds, each a Slack mention in its own channel, against 10 MCP ` +
      "servers × 20 tools (real SDK servers over stdio). Baseline from the same run: the whole catalog in every " +
      `request. Budget: the default (${defaults.maxTools} tools, ${defaults.windowShare * 100} % of the ` +
      `${WINDOW.toLocaleString("en")}-token window = ${tokenBudget.toLocaleString("en")} tokens). ` +
      "With router: agent.toolRouter set, a scripted router that names the right server (its request counted in the turn).",
    tables: [
      {
        title: "Per turn: the tool budget, the budget with a router call first, the whole catalog",
        columns: [
          "measure",
          "tool budget",
          "with router",
          "whole catalog",
          "budget / whole",
          "router / whole",
        ],
        rows: [
          row("prompt tokens per turn, mean (all model requests)", prompt),
          row("of which the router's (small model), mean", (ts) => mean(ts.map((t) => t.routerTokens))),
          row("model requests per turn, mean", (ts) => mean(ts.map((t) => t.requests))),
          row("tools per request, mean", (ts) => mean(perRequest(ts, (t) => t.toolsPerRequest))),
          row("tools per request, max", (ts) => max(perRequest(ts, (t) => t.toolsPerRequest))),
          row("tool tokens per request, mean", (ts) => mean(perRequest(ts, (t) => t.toolTokensPerRequest))),
          row("tool tokens per request, max", (ts) => max(perRequest(ts, (t) => t.toolTokensPerRequest))),
          row("turns that searched", (ts) => ts.filter((t) => t.searched).length),
          row("right tool ran", right),
          row("mention -> answer, p50", (ts) => p50(ts.map((t) => t.ms)), " ms"),
        ],
      },
    ],
    checks: [
      atMost(
        "catalog: tools per request",
        max(perRequest(budgeted, (t) => t.toolsPerRequest)),
        defaults.maxTools,
        "tools",
      ),
      atMost(
        "catalog: tool tokens per request",
        max(perRequest(budgeted, (t) => t.toolTokensPerRequest)),
        tokenBudget,
        "tokens",
      ),
      atLeast("catalog: turns whose right tool ran", right(budgeted), budgeted.length, "turns"),
      atLeast("catalog: turns whose right tool ran, with the router", right(routed), routed.length, "turns"),
      atMost(
        "catalog: prompt tokens per turn, budget / whole catalog",
        prompt(budgeted) / prompt(whole),
        0.5,
        "x",
      ),
    ],
  };
}
