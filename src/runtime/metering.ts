import { costOf, DEFAULT_PRICES, type Price, priceOf } from "../agent/prices.js";
import type { ModelEvent, ModelRequest, Provider } from "../agent/providers/provider.js";
import { ContextSlot } from "../core/async-context.js";
import type { Usage } from "../core/messages.js";
import { log } from "../log.js";
import type { Payer, UsageLedger } from "../store/usage.js";

/** Told of every model call's usage (Prometheus counters); must not throw. */
export type UsageListener = (model: string, usage: Usage, cost: number | undefined) => void;

/**
 * Counts every model call where it happens, in the provider: the turn's answer, its tool
 * steps, and the title and summary made after it. The call is charged to the payer of
 * the work it runs in (an AsyncLocalStorage set around each turn and command), so nothing
 * has to pass the asker down to the agent. A call with no payer (doctor) is counted in the
 * metrics only.
 */
export class Meter {
  private readonly payers = new ContextSlot<Payer>("payer");
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

  /** Runs `work` with its model calls (and those of what it starts) charged to `payer`. */
  within<T>(payer: Payer, work: () => T): T {
    return this.payers.run(payer, work);
  }

  price(model: string): Price | undefined {
    return priceOf(model, this.prices);
  }

  /** The provider, its usage reported as it streams (before the usage event reaches the caller). */
  wrap(provider: Provider): Provider {
    const meter = this;
    return {
      name: provider.name,
      listModels: (signal) => provider.listModels(signal),
      async *stream(req: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent> {
        for await (const event of provider.stream(req, signal)) {
          if (event.type === "usage") await meter.count(req.model, event.usage);
          yield event;
        }
      },
    };
  }

  private async count(model: string, usage: Usage): Promise<void> {
    const cost = costOf(usage, this.price(model));
    try {
      this.listener?.(model, usage, cost);
    } catch {
      // Counting must never change the answer.
    }
    const payer = this.payers.get();
    if (!payer || !this.ledger) return;
    try {
      await this.ledger.record({
        ...payer,
        model,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        ...(cost === undefined ? {} : { cost }),
      });
    } catch (err) {
      log.warn({ err, key: payer.key }, "a model call's usage was not recorded");
    }
  }
}
