import type { AgentEvent } from "../core/events.js";
import { currentTraceId } from "../core/spans.js";
import type { ThreadKey } from "../core/thread.js";
import { log } from "../log.js";
import type { UsageTotals } from "../store/usage.js";
import type { Inbound } from "./contract.js";
import type { TurnResult } from "./turn.js";

/** Hooks for metrics and logs (issue: operations); all optional. */
export interface TurnObserver {
  turnStarted?(inbound: Inbound): void;
  firstVisible?(inbound: Inbound, ms: number): void;
  turnEnded?(inbound: Inbound, outcome: TurnOutcome, ms: number, events: AgentEvent[]): void;
}

type TurnOutcome = "ok" | "error" | "interrupted";

/**
 * A turn's work between `turnStarted` and `turnEnded`, which `work` calls with its result;
 * work that throws instead ends as an error, or the turns-in-flight gauge would only go up.
 */
export async function observed(
  observer: TurnObserver | undefined,
  inbound: Inbound,
  started: number,
  work: (end: (outcome: TurnOutcome, ms: number, events: AgentEvent[]) => void) => Promise<void>,
): Promise<void> {
  observer?.turnStarted?.(inbound);
  let ended = false;
  const end = (outcome: TurnOutcome, ms: number, events: AgentEvent[]) => {
    ended = true;
    observer?.turnEnded?.(inbound, outcome, ms, events);
  };
  try {
    await work(end);
  } finally {
    if (!ended) end("error", Date.now() - started, []);
  }
}

/**
 * The one log line of a turn: how it ended, how long it took, its tool calls and tokens,
 * what its model calls cost (`spent`: those with a price), and its trace.
 */
export function logTurn(key: ThreadKey, result: TurnResult, ms: number, spent?: Readonly<UsageTotals>): void {
  // A line that would not be written is not built (a busy bot may log errors only).
  if (!log.isLevelEnabled("info")) return;
  const outcome = result.parked ? "waiting" : result.outcome;
  const traceId = currentTraceId();
  log.info(
    {
      key,
      outcome,
      ms,
      ...turnFigures(result.events),
      ...(spent?.calls ? { costUsd: spent.cost } : {}),
      ...(spent?.unpriced ? { unpricedCalls: spent.unpriced } : {}),
      ...(traceId ? { traceId } : {}),
    },
    "turn",
  );
}

/** The figures of one turn for its log line: tool calls with outcome, and token usage. */
function turnFigures(events: AgentEvent[]) {
  const tools = events.flatMap((e) =>
    e.type === "tool" && e.phase === "end" ? [`${e.server}/${e.tool}:${e.ok ? "ok" : "error"}`] : [],
  );
  const done = events.find((e) => e.type === "done");
  const error = events.find((e) => e.type === "error");
  return {
    toolCalls: tools.length,
    tools,
    tokensIn: done?.type === "done" ? done.usage.inputTokens : 0,
    tokensOut: done?.type === "done" ? done.usage.outputTokens : 0,
    ...(error?.type === "error" ? { error: error.error.code } : {}),
  };
}
