import { costOf, DEFAULT_PRICES, type Price, priceOf } from "../agent/prices.js";
import type { TapFor } from "../agent/providers/tap.js";
import { estimatedUsage } from "../agent/providers/usage-estimate.js";
import { ContextSlot } from "../core/async-context.js";
import type { Usage } from "../core/messages.js";
import { log } from "../log.js";
import type { Payer, UsageLedger, UsageTotals } from "../store/usage.js";

/** Told of every model call's usage (Prometheus counters); must not throw. */
export type UsageListener = (model: string, usage: Usage, cost: number | undefined) => void;

/** The work a payer's calls are charged in, what they used, and the records of them still being written. */
interface Charging {
  payer: Payer;
  /** What its model calls used so far. */
  spent: UsageTotals;
  writing: Set<Promise<void>>;
}

/**
 * Counts every model call where it happens, in the provider: the turn's answer, its tool
 * steps, and the title and summary made after it. The call is charged to the payer of
 * the work it runs in (an AsyncLocalStorage set around each turn and command), so nothing
 * has to pass the asker down to the agent. A call with no payer (doctor) is counted in the
 * metrics only.
 */
export class Meter {
  private readonly charging = new ContextSlot<Charging>("payer");
  private readonly prices: Readonly<Record<string, Price>>;
  private ledger: UsageLedger | undefined;

  constructor(
    prices: Readonly<Record<string, Price>> = {},
    private readonly listener?: UsageListener,
  ) {
    this.prices = { ...DEFAULT_PRICES, ...prices };
  }

  /** Where charged calls are recorded from now on (the store opens after the providers are checked). */
  keepIn(ledger: UsageLedger): void {
    this.ledger = ledger;
  }

  /**
   * Runs `work` with its model calls (and those of what it starts) charged to `payer`;
   * resolves once their records are written too, so the next turn's budget sees them.
   */
  async within<T>(payer: Payer, work: () => Promise<T>): Promise<T> {
    const charging: Charging = {
      payer,
      spent: { calls: 0, inputTokens: 0, outputTokens: 0, cost: 0, unpriced: 0 },
      writing: new Set(),
    };
    try {
      return await this.charging.run(charging, work);
    } finally {
      await Promise.all(charging.writing);
    }
  }

  /** What the model calls of the work this runs in have used so far (undefined outside any). */
  spent(): Readonly<UsageTotals> | undefined {
    return this.charging.get()?.spent;
  }

  price(model: string): Price | undefined {
    return priceOf(model, this.prices);
  }

  /**
   * Each model call's usage reported as it streams (before the usage event reaches the
   * caller). The providers report it however a call ends, before its error; but a consumer
   * that stops reading (a platform write failed, the thread's lock was lost) never gets
   * it: a call it left after words came and before their usage is counted from those.
   */
  readonly tap: TapFor = (req) => {
    let owed = false;
    let finished = false;
    let streamed = "";
    return {
      event: (event) => {
        if (event.type === "usage") {
          owed = false;
          this.count(req.model, event.usage, event.estimated);
        } else if (event.type === "stop") finished = true;
        else {
          owed = true;
          if (event.type === "text") streamed += event.delta;
        }
      },
      end: () => {
        if (owed && !finished) this.count(req.model, estimatedUsage(req, streamed), true);
      },
    };
  };

  /**
   * The metrics at once; the record is written beside the answer, not in front of it (the
   * usage comes just before the answer's last words), and its work waits for it at the end.
   */
  private count(model: string, usage: Usage, estimated?: true): void {
    const cost = costOf(usage, this.price(model));
    try {
      this.listener?.(model, usage, cost);
    } catch {
      // Counting must never change the answer.
    }
    const charging = this.charging.get();
    if (!charging) return;
    const { spent } = charging;
    spent.calls += 1;
    spent.inputTokens += usage.inputTokens;
    spent.outputTokens += usage.outputTokens;
    if (usage.cachedInputTokens)
      spent.cachedInputTokens = (spent.cachedInputTokens ?? 0) + usage.cachedInputTokens;
    if (cost === undefined) spent.unpriced += 1;
    else spent.cost += cost;
    if (estimated) spent.estimated = (spent.estimated ?? 0) + 1;
    if (!this.ledger) return;
    const writing = this.record(this.ledger, charging.payer, model, usage, cost, estimated);
    charging.writing.add(writing);
    void writing.then(() => charging.writing.delete(writing));
  }

  private async record(
    ledger: UsageLedger,
    payer: Payer,
    model: string,
    usage: Usage,
    cost: number | undefined,
    estimated: true | undefined,
  ): Promise<void> {
    try {
      await ledger.record({
        ...payer,
        model,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        ...(usage.cachedInputTokens ? { cachedInputTokens: usage.cachedInputTokens } : {}),
        ...(usage.cacheWriteTokens ? { cacheWriteTokens: usage.cacheWriteTokens } : {}),
        ...(cost === undefined ? {} : { cost }),
        ...(estimated ? { estimated } : {}),
      });
    } catch (err) {
      log.warn({ err, key: payer.key }, "a model call's usage was not recorded");
    }
  }
}
