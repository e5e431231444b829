import { describe, expect, it } from "vitest";
import { configSchema } from "../config.js";
import { costOf, DEFAULT_PRICES, priceOf } from "./prices.js";

describe("the price table", () => {
  it("finds a dated model id's own model", () => {
    expect(priceOf("gpt-4o-2024-08-06", DEFAULT_PRICES)).toEqual(DEFAULT_PRICES["gpt-4o"]);
    expect(priceOf("gpt-4o-mini-2024-07-18", DEFAULT_PRICES)).toEqual(DEFAULT_PRICES["gpt-4o-mini"]);
    expect(priceOf("claude-sonnet-4-20250514", DEFAULT_PRICES)).toEqual(DEFAULT_PRICES["claude-sonnet-4"]);
    expect(priceOf("claude-haiku-4-5-20251001", DEFAULT_PRICES)).toEqual(DEFAULT_PRICES["claude-haiku-4-5"]);
    expect(priceOf("claude-3-5-haiku-latest", DEFAULT_PRICES)).toEqual(DEFAULT_PRICES["claude-3-5-haiku"]);
    // A prefix without a dash after it is another model.
    expect(priceOf("gpt-4oz", DEFAULT_PRICES)).toBeUndefined();
    expect(priceOf("llama3.1:8b", DEFAULT_PRICES)).toBeUndefined();
  });

  it("prices a gateway's model id (OpenRouter's openai/gpt-4o) as its model, unless the table names the id itself", () => {
    expect(priceOf("openai/gpt-4o", DEFAULT_PRICES)).toEqual(DEFAULT_PRICES["gpt-4o"]);
    expect(priceOf("anthropic/claude-sonnet-4-20250514", DEFAULT_PRICES)).toEqual(
      DEFAULT_PRICES["claude-sonnet-4"],
    );
    const own = { input: 3, output: 12 };
    expect(priceOf("openai/gpt-4o", { ...DEFAULT_PRICES, "openai/gpt-4o": own })).toEqual(own);
    expect(priceOf("meta-llama/llama-3.3-70b", DEFAULT_PRICES)).toBeUndefined();
  });

  it("prices Claude Opus 4.5 and later at Anthropic's $5 / $25, not at Opus 4's $15 / $75", () => {
    for (const model of ["claude-opus-4-5", "claude-opus-4-5-20251101", "claude-opus-4-6", "claude-opus-4-8"])
      expect(priceOf(model, DEFAULT_PRICES), model).toMatchObject({ input: 5, output: 25, cachedInput: 0.5 });
    for (const model of ["claude-opus-4-20250514", "claude-opus-4-0", "claude-opus-4-1-20250805"])
      expect(priceOf(model, DEFAULT_PRICES), model).toMatchObject({ input: 15, output: 75 });
  });

  it("has the newer models it is sure of, and gives no family's price to a model it does not know", () => {
    expect(priceOf("gpt-5.1", DEFAULT_PRICES)).toEqual({ input: 1.25, output: 10, cachedInput: 0.125 });
    expect(priceOf("claude-sonnet-4-5-20250929", DEFAULT_PRICES)).toMatchObject({ input: 3, output: 15 });
    expect(priceOf("claude-sonnet-5-5", DEFAULT_PRICES)).toMatchObject({ input: 2, output: 10 });
    // A next version, or a variant with a price of its own, is not its family.
    for (const model of ["claude-opus-4-9", "o3-pro", "o3-mini", "gpt-5-pro", "gpt-5.2", "claude-haiku-5-5"])
      expect(priceOf(model, DEFAULT_PRICES), model).toBeUndefined();
  });

  it("costs a call per million tokens, and nothing it cannot price", () => {
    expect(costOf({ inputTokens: 1_000_000, outputTokens: 500_000 }, { input: 2.5, output: 10 })).toBe(7.5);
    expect(costOf({ inputTokens: 10, outputTokens: 10 }, undefined)).toBeUndefined();
  });

  it("costs cached input at the cached price, cache writes at theirs, and either at the input price without one", () => {
    const price = { input: 2, output: 10, cachedInput: 0.5, cacheWrite: 2.5 };
    const usage = {
      inputTokens: 1_000_000,
      outputTokens: 0,
      cachedInputTokens: 600_000,
      cacheWriteTokens: 100_000,
    };
    expect(costOf(usage, price)).toBeCloseTo(0.3 * 2 + 0.6 * 0.5 + 0.1 * 2.5, 12);
    expect(costOf(usage, { input: 2, output: 10 })).toBeCloseTo(2, 12);
  });

  it("takes cached prices in the config", () => {
    const config = configSchema.parse({
      usage: { prices: { "my-model": { input: 1, output: 2, cachedInput: 0.1 } } },
    });
    expect(config.usage.prices["my-model"]).toEqual({ input: 1, output: 2, cachedInput: 0.1 });
  });
});
