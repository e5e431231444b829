import type { Usage } from "../core/messages.js";
import { bareModelId } from "./model-limits.js";

/** What a model costs, in US dollars per million tokens. */
export interface Price {
  input: number;
  output: number;
  /** Input read from the provider's prompt cache; without it such input costs `input`. */
  cachedInput?: number;
  /** Input written to the prompt cache (Anthropic's 5-minute writes); without it such input costs `input`. */
  cacheWrite?: number;
}

const opus45: Price = { input: 5, output: 25, cachedInput: 0.5, cacheWrite: 6.25 };
const opus4: Price = { input: 15, output: 75, cachedInput: 1.5, cacheWrite: 18.75 };
const sonnet4: Price = { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 };
const fable5: Price = { input: 10, output: 50, cachedInput: 1, cacheWrite: 12.5 };

/**
 * List prices of the models teams most often point Switchboard at (USD per million
 * tokens, standard tier, as OpenAI's and Anthropic's pricing pages publish them), each
 * model by its own id: a family's price is no guess at its next version's (Opus 4.5 costs
 * a third of Opus 4). Not here: Claude Haiku 5.5, whose price depends on the prompt's
 * length (Sonnet 4 and 4.5 are listed at their price up to 200K input tokens), and what
 * was not certain when this was written (gpt-5.2 and later; Claude Opus 5.5's cache
 * prices, and the cache reads of Sonnet 5.5, Fable 5.1 and Mythos 5.1).
 * `usage.prices` in the config adds models and overrides these; a model with no price is
 * counted in tokens only.
 */
export const DEFAULT_PRICES: Readonly<Record<string, Price>> = {
  "gpt-4o": { input: 2.5, output: 10, cachedInput: 1.25 },
  "gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 },
  "gpt-4.1": { input: 2, output: 8, cachedInput: 0.5 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6, cachedInput: 0.1 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4, cachedInput: 0.025 },
  "gpt-5": { input: 1.25, output: 10, cachedInput: 0.125 },
  "gpt-5-mini": { input: 0.25, output: 2, cachedInput: 0.025 },
  "gpt-5-nano": { input: 0.05, output: 0.4, cachedInput: 0.005 },
  "gpt-5.1": { input: 1.25, output: 10, cachedInput: 0.125 },
  o3: { input: 2, output: 8, cachedInput: 0.5 },
  "o4-mini": { input: 1.1, output: 4.4, cachedInput: 0.275 },
  "claude-fable-5": fable5,
  "claude-mythos-5": fable5,
  "claude-fable-5-1": { input: 10, output: 50, cacheWrite: 12.5 },
  "claude-mythos-5-1": { input: 10, output: 50, cacheWrite: 12.5 },
  "claude-opus-5-5": { input: 4, output: 20 },
  "claude-opus-5": opus45,
  "claude-opus-4-8": opus45,
  "claude-opus-4-7": opus45,
  "claude-opus-4-6": opus45,
  "claude-opus-4-5": opus45,
  "claude-opus-4-1": opus4,
  "claude-opus-4-0": opus4,
  "claude-opus-4": opus4,
  "claude-sonnet-5-5": { input: 2, output: 10, cacheWrite: 2.5 },
  "claude-sonnet-5": { input: 2, output: 10, cachedInput: 0.2, cacheWrite: 2.5 },
  "claude-sonnet-4-6": sonnet4,
  "claude-sonnet-4-5": sonnet4,
  "claude-sonnet-4-0": sonnet4,
  "claude-sonnet-4": sonnet4,
  "claude-3-7-sonnet": sonnet4,
  "claude-haiku-4-5": { input: 1, output: 5, cachedInput: 0.1, cacheWrite: 1.25 },
  "claude-3-5-haiku": { input: 0.8, output: 4, cachedInput: 0.08, cacheWrite: 1 },
  "claude-3-haiku": { input: 0.25, output: 1.25, cachedInput: 0.03, cacheWrite: 0.3 },
};

/** What may follow a model's id and still name it: a snapshot's date, or the alias of the newest one. */
const SNAPSHOT = /^-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$/;

/**
 * The price of a model: its own entry, or that of the entry it is a dated snapshot of
 * ("gpt-4o-2024-08-06", "claude-sonnet-4-20250514"). Anything else a model's id adds
 * makes another model ("o3-pro", "gpt-4o-mini", "claude-opus-4-6"), with a price of its own
 * or none. A gateway's id ("openai/gpt-4o", OpenRouter's spelling) takes its model's price
 * unless the table names the gateway's id itself: a cost cap would otherwise never be
 * reached, every call costing $0.
 */
export function priceOf(model: string, table: Readonly<Record<string, Price>>): Price | undefined {
  const own = listedPrice(model, table);
  if (own) return own;
  const bare = bareModelId(model);
  return bare === model ? undefined : listedPrice(bare, table);
}

function listedPrice(model: string, table: Readonly<Record<string, Price>>): Price | undefined {
  const exact = table[model];
  if (exact) return exact;
  for (const [name, price] of Object.entries(table)) {
    if (model.startsWith(name) && SNAPSHOT.test(model.slice(name.length))) return price;
  }
  return undefined;
}

/** The cost of one model call in US dollars, or undefined when the model has no price. */
export function costOf(usage: Usage, price: Price | undefined): number | undefined {
  if (!price) return undefined;
  const cached = usage.cachedInputTokens ?? 0;
  const written = usage.cacheWriteTokens ?? 0;
  const fresh = usage.inputTokens - cached - written;
  return (
    (fresh * price.input +
      cached * (price.cachedInput ?? price.input) +
      written * (price.cacheWrite ?? price.input) +
      usage.outputTokens * price.output) /
    1_000_000
  );
}
