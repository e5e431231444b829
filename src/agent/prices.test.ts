import { describe, expect, it } from "vitest";
import { costOf, DEFAULT_PRICES, priceOf } from "./prices.js";

describe("the price table", () => {
  it("finds a dated model id's family, the longest name first", () => {
    expect(priceOf("gpt-4o-2024-08-06", DEFAULT_PRICES)).toEqual(DEFAULT_PRICES["gpt-4o"]);
    expect(priceOf("gpt-4o-mini-2024-07-18", DEFAULT_PRICES)).toEqual(DEFAULT_PRICES["gpt-4o-mini"]);
    expect(priceOf("claude-sonnet-4-20250514", DEFAULT_PRICES)).toEqual(DEFAULT_PRICES["claude-sonnet-4"]);
    // A prefix without a dash after it is another model.
    expect(priceOf("gpt-4oz", DEFAULT_PRICES)).toBeUndefined();
    expect(priceOf("llama3.1:8b", DEFAULT_PRICES)).toBeUndefined();
  });

  it("costs a call per million tokens, and nothing it cannot price", () => {
    expect(costOf({ inputTokens: 1_000_000, outputTokens: 500_000 }, { input: 2.5, output: 10 })).toBe(7.5);
    expect(costOf({ inputTokens: 10, outputTokens: 10 }, undefined)).toBeUndefined();
  });
});
