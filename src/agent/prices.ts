import type { Usage } from "../core/messages.js";

/** What a model costs, in US dollars per million tokens. */
export interface Price {
  input: number;
  output: number;
}

/**
 * List prices of the models teams most often point Switchboard at (USD per million
 * tokens, as published by OpenAI and Anthropic). `usage.prices` in the config adds
 * models and overrides these; a model with no price is counted in tokens only.
 */
export const DEFAULT_PRICES: Readonly<Record<string, Price>> = {
  "gpt-4o": { input: 2.5, output: 10 },
  "gpt-4o-mini": { input: 0.15, output: 0.6 },
  "gpt-4.1": { input: 2, output: 8 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4 },
  "gpt-5": { input: 1.25, output: 10 },
  "gpt-5-mini": { input: 0.25, output: 2 },
  "gpt-5-nano": { input: 0.05, output: 0.4 },
  o3: { input: 2, output: 8 },
  "o4-mini": { input: 1.1, output: 4.4 },
  "claude-opus-4": { input: 15, output: 75 },
  "claude-sonnet-4": { input: 3, output: 15 },
  "claude-3-7-sonnet": { input: 3, output: 15 },
  "claude-3-5-haiku": { input: 0.8, output: 4 },
  "claude-haiku-4-5": { input: 1, output: 5 },
};

/**
 * The price of a model: its own entry, else the longest entry its id starts with, so
 * that dated ids ("gpt-4o-2024-08-06", "claude-sonnet-4-20250514") find their family
 * and "gpt-4o-mini" never takes the price of "gpt-4o".
 */
export function priceOf(model: string, table: Readonly<Record<string, Price>>): Price | undefined {
  const exact = table[model];
  if (exact) return exact;
  let best: string | undefined;
  for (const name of Object.keys(table)) {
    if (model.startsWith(`${name}-`) && (best === undefined || name.length > best.length)) best = name;
  }
  return best === undefined ? undefined : table[best];
}

/** The cost of one model call in US dollars, or undefined when the model has no price. */
export function costOf(usage: Usage, price: Price | undefined): number | undefined {
  if (!price) return undefined;
  return (usage.inputTokens * price.input + usage.outputTokens * price.output) / 1_000_000;
}
