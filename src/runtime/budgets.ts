import { allowedModels, type Config } from "../config.js";
import { log } from "../log.js";
import { dayOf, type Payer, type UsageLedger, type UsageTotals } from "../store/usage.js";

type Cap = NonNullable<Config["usage"]["budgets"]["perUser"]>;

/** "3 h 12 min", "12 min", "under a minute". */
export function untilText(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return "under a minute";
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return h > 0 ? `${h} h ${m} min` : `${m} min`;
}

export const tokensText = (n: number): string => `${n.toLocaleString("en-US")} tokens`;
export const dollarsText = (n: number): string => `$${n.toFixed(n < 1 ? 4 : 2)}`;

/** What of a cap is spent, as a sentence part: "50,000 tokens (50,210 used)", or undefined when within it. */
function overspent(cap: Cap, used: UsageTotals): string | undefined {
  const tokens = used.inputTokens + used.outputTokens;
  if (cap.tokens !== undefined && tokens >= cap.tokens)
    return `${tokensText(cap.tokens)} (${tokensText(tokens)} used)`;
  if (cap.cost !== undefined && used.cost >= cap.cost)
    return `${dollarsText(cap.cost)} (${[`${dollarsText(used.cost)} used`, unpricedText(used)].filter(Boolean).join("; ")})`;
  return undefined;
}

/** "3 calls to models without a price are not in it", when a cost leaves calls out. */
export function unpricedText(used: UsageTotals): string | undefined {
  if (used.unpriced === 0) return undefined;
  const calls = used.unpriced === 1 ? "1 call to a model" : `${used.unpriced} calls to models`;
  return `${calls} without a price ${used.unpriced === 1 ? "is" : "are"} not in it`;
}

/**
 * The models a cost cap cannot see, told once at start-up: their calls cost $0 against
 * it, so a cap on dollars alone never stops them. Returns them.
 */
export function warnOfUnpricedModels(config: Config, price: (model: string) => unknown): string[] {
  const { perUser, perChannel } = config.usage.budgets;
  if (perUser?.cost === undefined && perChannel?.cost === undefined) return [];
  const { summary, title } = config.models;
  const models = new Set([...allowedModels(config), summary, title, config.agent.toolRouter.model]);
  const unpriced = [...models].filter((m): m is string => m !== undefined && price(m) === undefined);
  if (unpriced.length > 0)
    log.warn(
      { models: unpriced },
      "usage.budgets has a cost cap, but these models have no price, so their calls count as $0 against it; add them to usage.prices (or cap tokens too)",
    );
  return unpriced;
}

/**
 * The daily caps of `usage.budgets`: checked before a turn asks the model anything. A
 * turn that would start over a cap is answered with a sentence saying which cap, and
 * when it resets, instead. The terminal is the operator's and has no cap. When the
 * store cannot be read the turn goes on (it needs the store anyway and will say so).
 */
export class Budgets {
  constructor(
    private readonly config: Config,
    private readonly ledger: UsageLedger,
  ) {}

  get enabled(): boolean {
    const { perUser, perChannel } = this.config.usage.budgets;
    return perUser !== undefined || perChannel !== undefined;
  }

  async refusal(payer: Payer, now = Date.now()): Promise<string | undefined> {
    if (!this.enabled || payer.platform === "console") return undefined;
    const { perUser, perChannel } = this.config.usage.budgets;
    const day = dayOf(now);
    try {
      const [mine, channel] = await Promise.all([
        perUser ? this.ledger.totals({ user: payer.user, platform: payer.platform }, day) : undefined,
        perChannel
          ? this.ledger.totals({ channel: payer.channel, platform: payer.platform }, day)
          : undefined,
      ]);
      const resets = `It resets at 00:00 UTC, in ${untilText(nextMidnight(now) - now)}.`;
      const userOver = perUser && mine ? overspent(perUser, mine) : undefined;
      if (userOver)
        return `You have used your daily budget of ${userOver}, so I will not ask the model for now. ${resets}`;
      const channelOver = perChannel && channel ? overspent(perChannel, channel) : undefined;
      if (channelOver)
        return `This channel has used its daily budget of ${channelOver}, so I will not ask the model here for now. ${resets} An admin can raise usage.budgets.perChannel in the config.`;
      return undefined;
    } catch (err) {
      log.warn({ err, key: payer.key }, "budgets not checked: the store did not answer");
      return undefined;
    }
  }
}

/**
 * The caps asked again before each model call of a turn after its first (see
 * LoopOptions.mayGoOn): checked at the turn's start alone, a tool loop ran on past them.
 */
export function budgetGate(
  budgets: Budgets | undefined,
  payer: Payer,
): { mayGoOn?: () => Promise<string | undefined> } {
  return budgets?.enabled ? { mayGoOn: () => budgets.refusal(payer) } : {};
}

function nextMidnight(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
}
