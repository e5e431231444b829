import type { Span } from "@opentelemetry/api";
import { GEN_AI, inSpan } from "../core/spans.js";
import { log } from "../log.js";
import type { Payer, UsageTotals } from "../store/usage.js";
import type { Budgets } from "./budgets.js";
import type { Reply } from "./contract.js";
import type { Meter } from "./metering.js";

/** Who pays for a turn asked by `user` at `platform`/`channel` in thread `key`. */
export function payerOf(
  asked: Pick<Payer, "platform" | "channel" | "key"> & { user: { id: string } },
): Payer {
  return { platform: asked.platform, user: asked.user.id, channel: asked.channel, key: asked.key };
}

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

  /**
   * True when a daily budget refuses the turn: its asker was told so in `reply`, which then
   * shows the message as no longer being worked on, and no model is asked.
   */
  async turnedAway(payer: Payer, reply: Pick<Reply, "notice" | "declined">): Promise<boolean> {
    const refusal = await this.refusal(payer);
    if (!refusal) return false;
    log.info({ key: payer.key, user: payer.user }, "turn refused: over its daily budget");
    await reply.notice(refusal).catch(() => undefined);
    await reply
      .declined?.()
      .catch((err: unknown) =>
        log.debug({ err, key: payer.key }, "the refused message still shows as taken"),
      );
    return true;
  }

  /** What the model calls of the work this runs in (see `run`) have used so far. */
  spent(): Readonly<UsageTotals> | undefined {
    return this.deps.meter?.spent();
  }

  /**
   * Runs `work` charged to `payer`, in its span; the span ends with what its model calls
   * used (tokens, and the cost of those with a price).
   */
  run<T>(payer: Payer, kind: WorkKind, work: (span: Span) => Promise<T>): Promise<T> {
    const attributes = {
      "switchboard.platform": payer.platform,
      "switchboard.channel": payer.channel,
      "switchboard.thread": payer.key,
    };
    const { meter } = this.deps;
    if (!meter) return inSpan(`switchboard.${kind}`, attributes, work);
    return meter.within(payer, () =>
      inSpan(`switchboard.${kind}`, attributes, async (span) => {
        try {
          return await work(span);
        } finally {
          const spent = meter.spent();
          if (spent?.calls && span.isRecording()) showSpent(span, spent);
        }
      }),
    );
  }
}

/**
 * A piece of work's usage on its span (the GenAI conventions' token names, summed over its
 * calls), one attribute at a time: an object with computed keys made to be read once
 * costs several microseconds once a turn (see ops/traced-provider.ts).
 */
function showSpent(span: Span, spent: UsageTotals): void {
  span.setAttribute(GEN_AI.inputTokens, spent.inputTokens);
  span.setAttribute(GEN_AI.outputTokens, spent.outputTokens);
  span.setAttribute("switchboard.usage.model_calls", spent.calls);
  span.setAttribute("switchboard.usage.cost_usd", spent.cost);
  if (spent.unpriced) span.setAttribute("switchboard.usage.unpriced_calls", spent.unpriced);
}
