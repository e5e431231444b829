import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { AgentEvent } from "../core/events.js";
import type { Usage } from "../core/messages.js";
import type { ToolHub } from "../mcp/types.js";
import type { Inbound } from "../runtime/contract.js";
import type { TurnObserver } from "../runtime/turn-log.js";

/**
 * Prometheus metrics. Label sets are kept small on purpose: thread keys and user ids
 * would make one series per conversation, so queued turns are a total and a maximum.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly turns = new Counter({
    name: "switchboard_turns_total",
    help: "Turns answered, by platform and outcome (ok, error, interrupted).",
    labelNames: ["platform", "outcome"],
    registers: [this.registry],
  });
  readonly turnSeconds = new Histogram({
    name: "switchboard_turn_duration_seconds",
    help: "Time from the event to the last word of the reply.",
    labelNames: ["platform"],
    buckets: [0.5, 1, 2, 5, 10, 20, 40, 80, 160],
    registers: [this.registry],
  });
  readonly firstVisibleSeconds = new Histogram({
    name: "switchboard_first_visible_seconds",
    help: "Time from the event to the first thing the user sees (status or text).",
    labelNames: ["platform"],
    buckets: [0.1, 0.25, 0.5, 1, 2, 4, 8],
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: "switchboard_llm_tokens_total",
    help: "LLM tokens, by provider and direction (in = prompt, out = completion).",
    labelNames: ["provider", "direction"],
    registers: [this.registry],
  });
  readonly modelTokens = new Counter({
    name: "switchboard_llm_model_tokens_total",
    help: "LLM tokens of every model call (answers, tool steps, titles, summaries), by model and direction.",
    labelNames: ["model", "direction"],
    registers: [this.registry],
  });
  readonly cost = new Counter({
    name: "switchboard_llm_cost_dollars_total",
    help: "What the model calls cost in US dollars, by model (models with a price in the price table).",
    labelNames: ["model"],
    registers: [this.registry],
  });
  readonly votes = new Counter({
    name: "switchboard_feedback_votes_total",
    help: "Ratings of answers: each person's first vote on an answer, by platform and vote (good, bad).",
    labelNames: ["platform", "vote"],
    registers: [this.registry],
  });
  readonly voteChanges = new Counter({
    name: "switchboard_feedback_changes_total",
    help: "Ratings changed by the person who gave them, by platform and the vote they changed to.",
    labelNames: ["platform", "to"],
    registers: [this.registry],
  });
  readonly llmErrors = new Counter({
    name: "switchboard_llm_errors_total",
    help: "Turns that ended with an LLM error, by provider and error code.",
    labelNames: ["provider", "code"],
    registers: [this.registry],
  });
  readonly toolCalls = new Counter({
    name: "switchboard_tool_calls_total",
    help: "MCP tool calls by server, tool and outcome.",
    labelNames: ["server", "tool", "outcome"],
    registers: [this.registry],
  });
  readonly toolSeconds = new Histogram({
    name: "switchboard_tool_call_duration_seconds",
    help: "MCP tool call duration.",
    labelNames: ["server", "tool"],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60],
    registers: [this.registry],
  });
  readonly platformErrors = new Counter({
    name: "switchboard_platform_api_errors_total",
    help: "Platform API calls that failed, by platform and kind (rate_limited, error).",
    labelNames: ["platform", "kind"],
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: "switchboard_turns_in_flight",
    help: "Turns running or waiting for their thread's lock.",
    registers: [this.registry],
  });
  readonly queuedTurns = new Gauge({
    name: "switchboard_turns_queued",
    help: "Turns waiting behind another turn of the same thread.",
    registers: [this.registry],
  });
  readonly longestQueue = new Gauge({
    name: "switchboard_thread_queue_longest",
    help: "Turns waiting in the busiest thread's queue.",
    registers: [this.registry],
  });
  readonly serverUp = new Gauge({
    name: "switchboard_mcp_server_up",
    help: "1 when the MCP server is connected, 0 otherwise.",
    labelNames: ["server", "state"],
    registers: [this.registry],
  });

  constructor(private readonly llmProvider: string) {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Recomputes the gauges that mirror other components' state at scrape time. */
  watchHub(hub: ToolHub): void {
    const collect = () => {
      this.serverUp.reset();
      for (const s of hub.status())
        this.serverUp.set({ server: s.name, state: s.state }, s.state === "connected" ? 1 : 0);
    };
    this.collectors.push(collect);
  }

  private readonly collectors: Array<() => void> = [];

  /** Per-thread queues, read at scrape time. */
  watchQueues(stats: () => { queued: number; longest: number }): void {
    this.collectors.push(() => {
      const { queued, longest } = stats();
      this.queuedTurns.set(queued);
      this.longestQueue.set(longest);
    });
  }

  async render(): Promise<string> {
    for (const c of this.collectors) c();
    return this.registry.metrics();
  }

  /** One model call's tokens and cost (see Meter). */
  usage(model: string, usage: Usage, cost: number | undefined): void {
    this.modelTokens.inc({ model, direction: "in" }, usage.inputTokens);
    this.modelTokens.inc({ model, direction: "out" }, usage.outputTokens);
    if (cost !== undefined) this.cost.inc({ model }, cost);
  }

  /** A rating of an answer (see FeedbackDesk). */
  vote(platform: string, vote: string, first: boolean): void {
    if (first) this.votes.inc({ platform, vote });
    else this.voteChanges.inc({ platform, to: vote });
  }

  /** Counts a platform API failure; adapters call it (via `Metrics.current`). */
  platformError(platform: string, rateLimited: boolean): void {
    this.platformErrors.inc({ platform, kind: rateLimited ? "rate_limited" : "error" });
  }

  observer(): TurnObserver {
    return {
      turnStarted: () => this.inFlight.inc(),
      firstVisible: (inbound: Inbound, ms: number) =>
        this.firstVisibleSeconds.observe({ platform: inbound.platform }, ms / 1000),
      turnEnded: (inbound: Inbound, outcome, ms: number, events: AgentEvent[]) => {
        this.inFlight.dec();
        this.turns.inc({ platform: inbound.platform, outcome });
        this.turnSeconds.observe({ platform: inbound.platform }, ms / 1000);
        for (const e of events) this.countEvent(e);
      },
    };
  }

  private countEvent(e: AgentEvent): void {
    if (e.type === "done") {
      this.tokens.inc({ provider: this.llmProvider, direction: "in" }, e.usage.inputTokens);
      this.tokens.inc({ provider: this.llmProvider, direction: "out" }, e.usage.outputTokens);
    } else if (e.type === "error" && e.error.code.startsWith("llm_")) {
      this.llmErrors.inc({ provider: this.llmProvider, code: e.error.code });
    } else if (e.type === "tool" && e.phase === "end") {
      this.toolCalls.inc({ server: e.server, tool: e.tool, outcome: e.ok ? "ok" : "error" });
      this.toolSeconds.observe({ server: e.server, tool: e.tool }, e.ms / 1000);
    }
  }
}
