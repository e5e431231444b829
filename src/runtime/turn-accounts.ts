import type { Span } from "@opentelemetry/api";
import { inSpan } from "../core/spans.js";
import type { Payer } from "../store/usage.js";
import type { Budgets } from "./budgets.js";
import type { Meter } from "./metering.js";

/** What a piece of work is, as its span is named. */
export type WorkKind = "turn" | "takeover" | "resume" | "after_turn" | "command";

/**
 * Who pays for a turn and where it shows in a trace: the daily budgets checked before
 * it, its model calls charged to its asker, and its span, the parent of its model, tool
 * and platform-write spans (and of the title and summary made after it).
 */
export class TurnAccounts {
  constructor(private readonly deps: { meter?: Meter; budgets?: Budgets }) {}

  /** The sentence that refuses the turn when a daily budget is spent; undefined to go on. */
  async refusal(payer: Payer): Promise<string | undefined> {
    return this.deps.budgets?.refusal(payer);
  }

  run<T>(payer: Payer, kind: WorkKind, work: (span: Span) => Promise<T>): Promise<T> {
    const attributes = {
      "switchboard.platform": payer.platform,
      "switchboard.channel": payer.channel,
      "switchboard.thread": payer.key,
    };
    const traced = () => inSpan(`switchboard.${kind}`, attributes, work);
    return this.deps.meter ? this.deps.meter.within(payer, traced) : traced();
  }
}
